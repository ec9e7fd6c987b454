-- prelude.lua — the friendlier functions of the `tide` module, in Lua over the op functions generated
-- from the registry (tide.ops.NAME): TensorFlow's Python names, argument orders and defaults. Loaded
-- once when the REPL starts (embedded in the binary by repl/embed.py); each function documents itself
-- in tide.help, which :help prints. Errors raised by the ops name the user's line, not this file.
local tide = tide
local ops, help = tide.ops, tide.help
-- check(fn, opts, {names}): an unknown key in an options table is an error naming fn (lua_options.c).
local check = tide.check_options
tide.check_options = nil
-- prefer(fn, name): listings (completion, :help's suggestions) show fn under name, not its aliases.
local prefer = tide.prefer_name
tide.prefer_name = nil

local function is_options(v)
  return type(v) == "table" and next(v) ~= nil and type(next(v)) == "string"
end

local function merge(into, from)
  local t = {}
  for k, v in pairs(into or {}) do t[k] = v end
  for k, v in pairs(from or {}) do t[k] = v end
  return t
end

local function fill_with(value, default_dtype, fn)
  return function(shape, dtype, opts)
    if is_options(dtype) then dtype, opts = nil, dtype end
    check(fn, opts, {"name", "device"})
    return ops.Fill(shape, tide.constant(value, dtype or default_dtype), opts or {})
  end
end
tide.zeros = fill_with(0, tide.float32, "zeros")
tide.ones = fill_with(1, tide.float32, "ones")
help.zeros = "zeros(shape [, dtype=float32] [, {name=}])\n\nA tensor of zeros: Fill(shape, 0). zeros{784, 10}."
help.ones = "ones(shape [, dtype=float32] [, {name=}])\n\nA tensor of ones: Fill(shape, 1)."

local function random(op, doc, fn, names)
  return function(shape, opts)
    check(fn, opts, names)
    opts = opts or {}
    local attrs = {dtype = opts.dtype or tide.float32, seed = opts.seed, seed2 = opts.seed2, name = opts.name,
                   device = opts.device}
    return ops[op](shape, attrs)
  end, doc
end
local uniform
local uniform_options = {"minval", "maxval", "dtype", "seed", "seed2", "name", "device"}
local normal_options = {"mean", "stddev", "dtype", "seed", "seed2", "name", "device"}
uniform, help.random_uniform = random("RandomUniform",
  "random_uniform(shape [, {minval=0, maxval=1, dtype=float32, seed=0}])\n\n" ..
  "Uniform random values in [minval, maxval), drawn anew at every run; seeded by the graph seed rule.",
  "random_uniform", uniform_options)
tide.random_uniform = function(shape, opts)
  opts = opts or {}
  local u = uniform(shape, opts)
  local lo, hi = opts.minval or 0, opts.maxval or 1
  if lo == 0 and hi == 1 then return u end
  return u * (hi - lo) + lo
end
local normal, truncated
normal, help.random_normal = random("RandomNormal",
  "random_normal(shape [, {mean=0, stddev=1, dtype=float32, seed=0}])\n\nNormal random values.",
  "random_normal", normal_options)
truncated, help.truncated_normal = random("TruncatedNormal",
  "truncated_normal(shape [, {mean=0, stddev=1, dtype=float32, seed=0}])\n\n" ..
  "Normal random values, redrawn beyond two standard deviations.", "truncated_normal", normal_options)
local function scaled(base)
  return function(shape, opts)
    opts = opts or {}
    local v = base(shape, opts)
    if (opts.stddev or 1) ~= 1 then v = v * opts.stddev end
    if (opts.mean or 0) ~= 0 then v = v + opts.mean end
    return v
  end
end
tide.random_normal, tide.truncated_normal = scaled(normal), scaled(truncated)

-- Reductions over all axes when no axis is given (TensorFlow's reduce_*).
for _, pair in ipairs{{"sum", "Sum"}, {"mean", "Mean"}, {"max", "Max"}, {"min", "Min"}, {"prod", "Prod"}} do
  local name, op = pair[1], pair[2]
  local f = function(x, axis, opts)
    if is_options(axis) then axis, opts = nil, axis end
    if type(opts) == "boolean" then opts = {keep_dims = opts} end
    check(name, opts, {"keep_dims", "name", "device"})
    if axis == nil then axis = ops.Range(0, ops.Rank(x), 1) end
    return ops[op](x, axis, opts or {})
  end
  tide[name], tide["reduce_" .. name] = f, f
  prefer(f, name)
  help[name] = name .. "(x [, axis] [, keep_dims | {keep_dims=false, name=}])\n\n" ..
    "The " .. name .. " of x's elements along axis (a number or a list), or over all of them when axis is " ..
    "omitted (TensorFlow's reduce_" .. name .. "). Also reduce_" .. name .. "."
  help["reduce_" .. name] = help[name]
end

tide.cast = function(x, dtype, opts)
  if is_options(dtype) then return ops.Cast(x, dtype) end
  check("cast", opts, {"name", "device"})
  return ops.Cast(x, merge(opts, {DstT = dtype}))
end
help.cast = "cast(x, dtype [, {name=}])\n\nx converted to dtype (Cast)."

tide.one_hot = function(indices, depth, opts)
  check("one_hot", opts, {"on_value", "off_value", "dtype", "axis", "name", "device"})
  opts = opts or {}
  local dtype = opts.dtype or tide.float32
  -- host tensors: eager when indices is one too, Consts of the graph when it is a node
  return ops.OneHot(indices, depth, tide.tensor(opts.on_value or 1, dtype), tide.tensor(opts.off_value or 0, dtype),
                    {axis = opts.axis, name = opts.name, device = opts.device})
end
tide.onehot = tide.one_hot
prefer(tide.one_hot, "one_hot")
prefer(tide.run, "run") -- also tide.eval
help.one_hot = "one_hot(indices, depth [, {on_value=1, off_value=0, dtype=float32, axis=-1}])\n\n" ..
  "A one-hot encoding of integer indices: one_hot(labels, 10). On a host tensor (a batch of labels) it runs " ..
  "at once and returns a tensor, as every op function does on host tensors."

tide.softmax_cross_entropy = function(labels, logits, opts)
  check("softmax_cross_entropy", opts, {"name", "device"})
  local loss = ops.SoftmaxCrossEntropyWithLogits(logits, labels, opts or {})
  return loss
end
help.softmax_cross_entropy = "softmax_cross_entropy(labels, logits [, {name=}])\n\n" ..
  "Per-example cross-entropy of softmax(logits) against label distributions (each row sums to 1). " ..
  "Average it with mean(...) for a loss."
tide.sparse_softmax_cross_entropy = function(labels, logits, opts)
  check("sparse_softmax_cross_entropy", opts, {"name", "device"})
  local loss = ops.SparseSoftmaxCrossEntropyWithLogits(logits, labels, opts or {})
  return loss
end
help.sparse_softmax_cross_entropy = "sparse_softmax_cross_entropy(labels, logits [, {name=}])\n\n" ..
  "Per-example cross-entropy of softmax(logits) against integer class labels (int32 or int64)."

tide.stack = function(values, axis, opts)
  if is_options(axis) then axis, opts = nil, axis end
  check("stack", opts, {"axis", "name", "device"})
  return ops.Pack(values, merge({axis = axis or 0}, opts))
end
help.stack = "stack(values [, axis=0])\n\nStacks a list of tensors of one shape along a new axis (Pack)."

help.placeholder = "placeholder(dtype [, shape] [, {name=}])\n\n" ..
  "A value fed at run time: run(y, {[x] = tensor}). Unknown dimensions are -1 or \"?\": {-1, 784}, " ..
  "{\"?\", \"?\"}, or the string \"[?, 784]\"; \"[]\" is a scalar; no shape: any shape. ({nil, nil} is {} " ..
  "to Lua, so an empty table is refused.)"
help.constant = "constant(value [, dtype] [, {name=, shape=}])\n\nA Const node holding value (a number, nested " ..
  "tables, a tensor). With shape, one value fills it (constant(0.1, float32, {shape={3}})) and as many values as " ..
  "it holds are reshaped to it, as TensorFlow's tf.constant does."
help.variable = "variable(initial_value [, {name=, trainable=true, dtype=}])\n\n" ..
  "A variable and its initializer (an Assign named NAME/init). run(init()) initialises every variable; " ..
  "printing a variable at the prompt shows its current value."
help.init = "init()\n\nA node that initialises every variable when run: run(init())."
help.global_step = "global_step()\n\nThe graph's int64 step counter variable (created on first use)."
help.gradients = "gradients(ys, xs [, grad_ys])\n\n" ..
  "Symbolic gradients d(sum ys)/d(xs): one node for a single x (nil when no path), else a list."
help.run = "run(fetches [, feeds] [, {trace=false, timeout=seconds}])\n\n" ..
  "Runs the graph: fetches is a node (-> a tensor), a list of nodes (-> a list) or a table of named nodes " ..
  "(-> a table); feeds is {[placeholder] = value}. Nodes without outputs (a training step) run as targets. " ..
  "With trace=true a second result lists each node that ran: {node, op, device, thread, start_us, end_us, " ..
  "us, bytes, shapes} (times from the step's first start), and its field simulated_ms is the step time placement " ..
  "predicted. Ctrl-C stops the entry (a run in flight is cancelled; pcall does not catch it)."
help.clock = "tide.clock()\n\nSeconds on a monotonic wall clock (for timing steps: t = tide.clock(); ...; tide.clock() - t)."
help.eval = help.run
help.session = "session()\n\nAnother session over the same graph and engine: s:run(fetches, feeds), s:close()."
help.node = "node(name)\n\nThe node (or \"name:index\" output) of the graph called name, e.g. after :load."
help.scope = "scope(name, fn)\n\nRuns fn; the nodes it builds are named name/... (name scopes nest)."
help.device = "device(spec, fn)\n\nRuns fn; the nodes it builds request device spec (\"/cpu:1\", \"/device:cpu:*\")."
help.sgd = "sgd(learning_rate)\n\nGradient descent. opt:minimize(loss [, {var_list=, global_step=true}]) " ..
  "returns the training step."
help.momentum = "momentum(learning_rate [, momentum=0.9] [, {nesterov=false}])\n\nMomentum optimizer."
help.adagrad = "adagrad(learning_rate [, {initial_accumulator=0.1}])\n\nAdagrad optimizer."
help.rmsprop = "rmsprop(learning_rate [, {decay=0.9, momentum=0, epsilon=1e-10}])\n\nRMSProp optimizer."
help.adam = "adam(learning_rate [, {beta1=0.9, beta2=0.999, epsilon=1e-8}])\n\nAdam optimizer."
help.quit = "quit([status])\n\nLeaves tide (also :quit and Ctrl-D)."

tide.summary = function(tag, value, opts)
  check("summary", opts, {"name", "device"})
  return ops.ScalarSummary(value, merge(opts, {tag = tag}))
end
help.summary = "summary(tag, value [, {name=}])\n\n" ..
  "Returns value (one number); the run log records it under tag with the step at every run that " ..
  "computes it (a loss curve: run({train, summary(\"loss\", loss)}))."

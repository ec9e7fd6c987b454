-- test_nodes.lua — the REPL's node API, run by `tide tests/lua/test_nodes.lua` (exits non-zero on the
-- first failed check): op functions generated from the registry, attrs tables, constants' dtypes,
-- arithmetic metamethods, naming after globals, run's three fetch forms, feeds, sessions, scope and
-- device, node(name), gradients, variables and optimizers, and the errors users cause.
local T = dofile((arg[0]:match("^(.*/)") or "") .. "check.lua")
local check, raises = T.check, T.raises
local function near(a, b, tol) return math.abs(a - b) <= (tol or 1e-5) * math.max(1, math.abs(b)) end

-- op functions exist under several names, also in tide.ops
check(matmul == tide.matmul and mat_mul == matmul and tide.ops.MatMul == matmul, "matmul names")
check(sparse_softmax_cross_entropy_with_logits == tide.ops.SparseSoftmaxCrossEntropyWithLogits, "snake name")
check(conv2d == tide.ops.Conv2D, "conv2d name")
check(select ~= tide.select and type(select(1, "a")) == "string", "Lua's select kept; the op is tide.select")

-- constants: inferred dtypes; an operand takes the other's dtype
local c = constant({{1, 2}, {3, 4}})
check(tostring(c:dtype()) == "int32", "integers are int32")
check(tostring(constant(1.5):dtype()) == "float32", "floats are float32")
check(tostring(constant(1, float64):dtype()) == "float64", "explicit dtype")
local f = constant({1.5, 2.5})
check(tostring((f + 1):dtype()) == "float32", "x + 1 keeps x's dtype")
check(tostring((2 * f):dtype()) == "float32", "2 * x keeps x's dtype")
local sh = c:shape()
check(#sh == 2 and sh[1] == 2 and sh[2] == 2, "shape")
check(c:op() == "Const", "op")

-- arithmetic metamethods build nodes and compute the right values
local v = run((f + 1) * 2 - f / 2 + (-f) ^ 2)
for i = 1, 2 do
  local x = ({1.5, 2.5})[i]
  check(near(v[i], (x + 1) * 2 - x / 2 + x * x), "arithmetic element " .. i)
end
check(near(run(constant(7.0) % 3):item(), 1), "mod")
-- Lua's % floors like Python's: FloorMod, not TensorFlow's truncating Mod
check((constant(-7) % 2):op() == "FloorMod" and run(constant(-7) % 2):item() == 1, "% is FloorMod")
check(run(tide.ops.Mod(constant(-7), constant(2))):item() == -1, "Mod truncates as in TensorFlow")
-- friendly names stay: concat builds ConcatV2 (values, then the axis); the legacy Concat (axis first)
-- is tide.ops.Concat; gather is TensorFlow's Gather (axis 0), gather_v2 takes the axis as an input
local cc = concat({constant({1, 2}), constant({3})}, 0)
check(cc:op() == "ConcatV2" and run(cc):equal{1, 2, 3}, "concat is ConcatV2")
check(run(tide.ops.Concat(0, {constant({1}), constant({2})})):equal{1, 2}, "legacy Concat: axis first")
local m = constant({{1, 2}, {3, 4}})
check(run(gather(m, {1})):equal{{3, 4}} and run(gather_v2(m, {1}, 1)):equal{{2}, {4}}, "gather, gather_v2")
-- tide.select is TensorFlow 1.x's Select: a vector condition picks rows; select_v2 broadcasts
local cond = constant({true, false})
check(run(tide.select(cond, m, -m)):equal{{1, 2}, {-3, -4}}, "select picks rows")
check(run(select_v2(cond, m, -m)):equal{{1, -2}, {3, -4}}, "select_v2 broadcasts")

-- attrs: a trailing table; name and device too
local p = matmul(constant({{1, 2}}), constant({{3, 4}}), {transpose_b = true, name = "dot"})
check(p:name() == "dot", "explicit name")
check(run(p)[1][1] == 11, "transpose_b")
raises(matmul, {"MatMul has no attr 'transpose'"}, c, c, {transpose = true})
raises(matmul, {"attr 'transpose_a' must be a boolean"}, c, c, {transpose_a = 1})
raises(matmul, {"takes 2 inputs"}, c)
raises(c.shape, {"expected a node, got a number"}, 3)
raises(relu, {"Relu takes 1 input"}, c, c)

-- names follow globals assigned in this entry (scripts are one entry)
weights = variable(zeros{2, 2})
check(weights:name() == "weights", "variable named after its global: " .. weights:name())
check(node("weights/init"):op() == "Assign", "its initializer follows the name")
hidden = relu(weights)
check(hidden:name() == "hidden", "op named after its global")
hidden2 = hidden
check(hidden2:name() == "hidden", "a second global does not rename")
local loc = relu(weights)
check(loc:name():find("^relu"), "locals keep the op's name")
scope("block", function() inner = relu(weights) end)
check(inner:name() == "block/inner", "scope prefix kept: " .. inner:name())
first, second = split(0, constant({{1, 2}, {3, 4}}), {num_split = 2})
check(first:name() == "split:0" or first:name():find("^split"), "multi-output nodes keep their name")
check(second:name():find(":1$"), "second output")

-- placeholders and feeds
x = placeholder(float32, {nil, 2})
local xs = x:shape()
check(xs[1] == -1 and xs[2] == 2, "unknown batch dimension")
-- {nil, nil} is {} to Lua: refused, never a silent scalar; "?" and shape strings are unknown dims
raises(placeholder, {"the shape {} is ambiguous", "-1", "[]"}, float32, {nil, nil})
local function dims(n) local t = {} for i, d in ipairs(n:shape()) do t[i] = d end return table.concat(t, ",") end
check(dims(placeholder(float32, {"?", "?"})) == "-1,-1", "'?' dimensions")
check(dims(placeholder(float32, {-1, -1})) == "-1,-1", "-1 dimensions")
check(dims(placeholder(float32, "[?, 784]")) == "-1,784", "a shape string as shapes print")
check(#placeholder(float32, "[]"):shape() == 0, "a scalar placeholder is \"[]\"")
check(placeholder(float32):shape() == nil, "no shape: unknown rank")
raises(placeholder, {"'[?, x]' is not a shape"}, float32, "[?, x]")
raises(placeholder, {"dimension 1 is -2"}, float32, {-2, 3})
y = matmul(x, constant({{1.0}, {2.0}}))
local out = run(y, {[x] = {{1, 1}, {2, 3}}})
check(out:shape()[1] == 2 and out[1][1] == 3 and out[2][1] == 8, "fed run")
raises(run, {"Placeholder"}, y)
raises(run, {"feed for 'x'"}, y, {[x] = "text"})
raises(run, {"feeds must be a table"}, y, 3)
check(run(y, {["x:0"] = {{1, 0}}})[1][1] == 1, "feeding by name")

-- fetch forms: one, list, table; targets
local list = run({f, c})
check(#list == 2 and list[1][1] == 1.5 and list[2][2][2] == 4, "list fetch")
local named = run({a = f, b = c})
check(named.a[2] == 2.5 and named.b[1][2] == 2, "named fetch")
local noop = tide.ops.NoOp()
check(select("#", run(noop)) == 0, "a target returns nothing")
raises(run, {"cannot fetch a number"}, 3)
raises(run, {"run needs something"})
local _, stats = run(y, {[x] = {{1, 1}}}, {trace = true})
check(type(stats) == "table" and #stats >= 1 and stats[1].node and stats[1].us >= 0, "trace stats")

-- a timeout under a millisecond is a timeout, not "none" (it was truncated to 0 ms)
local slow_a = random_uniform({300, 300})
local slow = slow_a
for _ = 1, 60 do slow = matmul(slow, slow_a) end
raises(run, {"timeout"}, slow, nil, {timeout = 0.0006})
raises(run, {"timeout must be a number"}, slow, nil, {timeout = -1})
check(run(f, nil, {timeout = 5})[1] == 1.5, "a run within its timeout returns its value")

-- eval, sessions
check(f:eval()[1] == 1.5, "node:eval")
local s = session()
check(s:run(f)[2] == 2.5, "second session")
s:close()
raises(function() return s:run(f) end, {"closed"})

-- device scopes
device("/cpu:0", function() on_cpu = constant(1) end)
check(on_cpu:device() == "/cpu:0", "requested device")
raises(device, {"bad device specification"}, "/tpu:0", function() end)
raises(function() device("/cpu:7", function() bad_dev = constant(1) + 1 end); run(bad_dev) end, {"matches none"})

local function nest(n) if n == 0 then return constant(1) end return scope("s", function() return nest(n - 1) end) end
check(nest(10):name() == string.rep("s/", 10) .. "const" or nest(10):name():find("^s/s/s/s/s/s/s/s/s/s/const"), "nested scopes")
raises(nest, {"nested more than 50 deep"}, 60)

-- node(name)
check(node("dot") == p, "node(name) gives the same handle")
raises(node, {"no node"}, "no_such_node")

-- gradients: d/dw sum(w^2) = 2w
w = variable(constant({1.0, -2.0}))
loss = sum(w * w)
g = gradients(loss, w)
run(init())
local gv = run(g)
check(gv[1] == 2 and gv[2] == -4, "gradient values")
local gl = gradients(loss, {w, x})
check(gl[1] ~= nil and gl[2] == nil, "no path gives nil")

-- training: sgd reduces the loss; the variable prints its value
train = sgd(0.1):minimize(loss)
for _ = 1, 10 do run(train) end
local after = run(w)
check(near(after[1], 0.8 ^ 10), "sgd steps: " .. tostring(after[1]))
for _, make in ipairs{function() return momentum(0.05) end, function() return adam(0.1) end,
                      function() return rmsprop(0.05) end, function() return adagrad(0.5) end} do
  local wv = variable(constant({3.0}))
  local l = sum(wv * wv)
  local step = make():minimize(l, {var_list = {wv}})
  run(init())
  local before = run(l):item()
  for _ = 1, 20 do run(step) end
  check(run(l):item() < before, tostring(make()) .. " reduces the loss")
end
raises(sgd, {"learning rate must be a positive number"}, -1)
raises(variable, {"initial value is missing"})

-- reductions over all axes or one
check(run(sum(constant({{1, 2}, {3, 4}}))):item() == 10, "sum over all")
local s1 = run(sum(constant({{1, 2}, {3, 4}}), 1))
check(s1[1] == 3 and s1[2] == 7, "sum over axis 1")
check(run(mean(constant({{1.0, 2.0}, {3.0, 4.0}}), 0, true)):shape()[1] == 1, "keep_dims")
check(tostring(cast(c, float64):dtype()) == "float64", "cast")
check(run(one_hot(constant({0, 2}), 3))[2][3] == 1, "one_hot")

-- dofile, loadfile and load run with the same globals as the script or prompt, and name nodes after
-- them (they used _G: the file saw none of the prompt's globals and its nodes kept op names)
local path = os.tmpname()
local f = assert(io.open(path, "w"))
f:write("file_w = variable(zeros{2})\nfile_y = relu(from_prompt + 1)\nfile_value = from_prompt_number + 1\n")
f:close()
from_prompt = constant({1.0, -3.0})
from_prompt_number = 41
dofile(path)
check(file_value == 42, "dofile sees and sets the same globals")
check(file_w:name() == "file_w" and file_y:name() == "file_y", "dofile names nodes after globals: " .. file_y:name())
check(loadfile(path) ~= nil and load("return from_prompt_number")() == 41, "loadfile and load see them too")
check(load("return from_prompt_number", "chunk", "t", {})() == nil, "an explicit env is kept")
os.remove(path)

T.done("test_nodes")

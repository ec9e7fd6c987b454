-- debug_overhead.lua — what the step debugger costs a training loop (docs/debugger.md, "What it costs").
--
--   tide --no-log tests/bench/debug_overhead.lua [CYCLES] [STEPS]
--
-- An MLP (784-512-256-10, ReLU, softmax cross-entropy, SGD) trains on a fixed random batch of 128.
-- Four configurations take turns in the same process, in rounds of STEPS steps (default 100: about
-- 0.13 s a round on a quiet machine), as ABCD DCBA ... over CYCLES cycles (default 20; 10 x 50 gave
-- 0.06 to 10 % for the same build on this VM) so that a drift of the machine's speed falls on all
-- alike; about 15 s in all on a quiet machine:
--   none      no breakpoint: the debugger is detached
--   attached  a breakpoint on a node that never runs: attached, watching none of the plan's nodes (so
--             the plan stays fused and its steps run as without a debugger: docs/debugger.md)
--   health    has_inf_or_nan: every node checked after it ran (so the plan is unfused), every output
--             scanned for NaN and infinities but those of ops that cannot make them (ReLU, reshapes...;
--             nothing fires; no health summaries: those are made only for a stop)
--   keep      keep mode (:keep on): attached, nothing watched, nothing let go during a step, every
--             value of the last step held until the next starts (docs/debugger.md section 9)
-- Each cycle gives a ratio per configuration (its round time / the "none" round's); the figures are
-- the medians of those ratios, as JSON lines, with the quartiles of the ratios (p25, p75: their spread)
-- and the median milliseconds a step of each configuration:
--   debug.attached_overhead_pct  (median attached / none - 1) x 100; goal <= 2
--   debug.health_overhead_pct    (median health / none - 1) x 100; goal <= 15
--   debug.keep_overhead_pct      (median keep / none - 1) x 100; no goal (its cost is meant to be memory)
-- Timings on a loaded machine are noisy: the lines say how many cycles and the per-step times.
local cycles = tonumber(arg and arg[1]) or 20
local steps = tonumber(arg and arg[2]) or 100
local B = 128

x = placeholder(float32, {B, 784})
labels = placeholder(float32, {B, 10})
local function dense(input, n_in, n_out, name, act)
  local W = variable(random_uniform({n_in, n_out}, {minval = -0.05, maxval = 0.05}), {name = name .. "/W"})
  local b = variable(zeros({n_out}), {name = name .. "/b"})
  local y = matmul(input, W) + b
  return act and relu(y) or y
end
h1 = dense(x, 784, 512, "h1", true)
h2 = dense(h1, 512, 256, "h2", true)
logits = dense(h2, 256, 10, "out", false)
loss = mean(softmax_cross_entropy(labels, logits))
train = sgd(0.01):minimize(loss)
run(init())

local xs = run(random_uniform({B, 784}))
local ys = run(one_hot(cast(random_uniform({B}, {maxval = 10}), int32), 10))
local feeds = {[x] = xs, [labels] = ys}

local function configure(name)
  for _, b in ipairs(dbg.breaks()) do dbg.delete(b.id) end
  dbg.keep(name == "keep")
  if name == "attached" then dbg.break_at("no_node_is_called_this") end
  if name == "health" then dbg.on_bad() end
end

local function round()
  local t0 = tide.clock()
  for _ = 1, steps do run(train, feeds) end
  return (tide.clock() - t0) / steps
end

for _ = 1, 10 do run(train, feeds) end -- warm-up
local names = {"none", "attached", "health", "keep"}
local times = {none = {}, attached = {}, health = {}, keep = {}}
local ratios = {attached = {}, health = {}, keep = {}}
for c = 1, cycles do
  local order = c % 2 == 1 and {1, 2, 3, 4} or {4, 3, 2, 1}
  local this = {}
  for _, k in ipairs(order) do
    configure(names[k])
    run(train, feeds) -- a new plan's first step is not timed
    this[names[k]] = round()
    table.insert(times[names[k]], this[names[k]])
  end
  table.insert(ratios.attached, this.attached / this.none)
  table.insert(ratios.health, this.health / this.none)
  table.insert(ratios.keep, this.keep / this.none)
end
configure("none")

local function quantile(t, q)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  local at = 1 + q * (#s - 1) -- linear between the two nearest ranks
  local lo = math.floor(at)
  local hi = math.min(lo + 1, #s)
  return s[lo] + (s[hi] - s[lo]) * (at - lo)
end
local function median(t) return quantile(t, 0.5) end

local function line(name, config, goal)
  local r = ratios[config]
  print(string.format('{"name": "%s", "value": %.2f, "unit": "%%", %s"p25": %.2f, "p75": %.2f, "cycles": %d, ' ..
                      '"steps_per_round": %d, "ms_per_step_none": %.3f, "ms_per_step_%s": %.3f}',
                      name, (median(r) - 1) * 100, goal and string.format('"goal_max": %d, ', goal) or "",
                      (quantile(r, 0.25) - 1) * 100, (quantile(r, 0.75) - 1) * 100, cycles, steps,
                      median(times.none) * 1e3, config, median(times[config]) * 1e3))
end
line("debug.attached_overhead_pct", "attached", 2)
line("debug.health_overhead_pct", "health", 15)
line("debug.keep_overhead_pct", "keep", nil)

-- two_towers.lua — model parallelism on two virtual CPU devices (the talk's "split the model across
-- devices"): two towers of dense layers joined at the end. Placement puts each node on a device, and
-- every tensor that crosses devices goes through a _Send/_Recv pair; this prints both, then the step
-- time placement predicted and the step time measured.
-- Run: tide --devices 2 examples/two_towers.lua [STEPS [WIDTH [BATCH]]]   (default 20 1024 256)
--      TIDE_PLACEMENT=naive|round_robin|greedy (default greedy) picks the placement strategy.
local steps = tonumber(arg and arg[1]) or 20
local width = tonumber(arg and arg[2]) or 1024
local batch = tonumber(arg and arg[3]) or 256
x = placeholder(float32, {batch, width})
local function tower(name, seed)
  return scope(name, function()
    local h = x
    for i = 1, 4 do
      local W = variable(random_normal({width, width}, {stddev = 0.03, seed = seed * 10 + i}), {name = "W" .. i})
      h = relu(matmul(h, W))
    end
    return h
  end)
end
y = sum(tower("left", 1) + tower("right", 2))
run(init())
local feed = {[x] = run(random_uniform({batch, width}, {seed = 3}))}
local _, stats = run(y, feed, {trace = true})

local by_device, transfers = {}, {}
for _, t in ipairs(stats) do
  local dev = t.device:gsub("^/job:localhost/replica:0/task:0/device:", "/")
  if t.op == "_Send" or t.op == "_Recv" then
    transfers[#transfers + 1] = string.format("  %-5s %-8s %s", t.op, dev, t.node)
  else
    by_device[dev] = by_device[dev] or {}
    table.insert(by_device[dev], t.node)
  end
end
local devices = {}
for dev in pairs(by_device) do devices[#devices + 1] = dev end
table.sort(devices)
for _, dev in ipairs(devices) do
  table.sort(by_device[dev])
  print(string.format("%s (%d nodes): %s", dev, #by_device[dev], table.concat(by_device[dev], " ")))
end
table.sort(transfers)
print(string.format("%d transfers:", #transfers))
for _, line in ipairs(transfers) do print(line) end
-- Step time: what placement predicted (the cost model's simulated step) and what the steps measure
-- (median wall time of `steps` runs, after two warm-up runs).
print(string.format("simulated step: %.2f ms", stats.simulated_ms))
for _ = 1, 2 do run(y, feed) end
local times = {}
for i = 1, steps do
  local t0 = tide.clock()
  run(y, feed)
  times[i] = (tide.clock() - t0) * 1e3
end
table.sort(times)
print(string.format("measured step: %.2f ms (median of %d)", times[(steps + 1) // 2], steps))

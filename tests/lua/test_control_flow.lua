-- test_control_flow.lua — cond and while_loop at the prompt (docs/control-flow.md), run by
-- `tide tests/lua/test_control_flow.lua`: results against plain Lua loops, values from outside,
-- numbers as results, tables of results, nesting, shape invariants, options, and the errors users cause.
local T = dofile((arg[0]:match("^(.*/)") or "") .. "check.lua")
local check, raises = T.check, T.raises

local function value(node, feeds) return run(node, feeds):item() end

-- cond: the branch taken, values read from outside, numbers as results
local x = placeholder(float32, "[]")
local y = cond(greater(x, 0), function() return x * 2 end, function() return -x end)
check(value(y, {[x] = 3}) == 6 and value(y, {[x] = -5}) == 5, "cond picks the branch")
local a, b = cond(greater(x, 0), function() return x, 1 end, function() return 0.0, 2 end)
check(value(a, {[x] = 4}) == 4 and value(b, {[x] = 4}) == 1 and value(b, {[x] = -4}) == 2, "cond, two results")
-- the untaken branch would fail (a reshape to a size the value does not have)
local v = placeholder(float32, {-1})
local safe = cond(greater(size(v), 3), function() return reduce_sum(reshape(v, {2, 2})) end,
                  function() return reduce_sum(v) end)
check(value(safe, {[v] = {1, 2}}) == 3 and value(safe, {[v] = {1, 2, 3, 4}}) == 10, "untaken branch does not run")

-- while_loop against the same loop in Lua
local i, s = while_loop(function(i, s) return less(i, 10) end, function(i, s) return i + 1, s + i end, {0, 0})
local li, ls = 0, 0
while li < 10 do li, ls = li + 1, ls + li end
check(value(i) == li and value(s) == ls, "counting loop")
-- a single variable, a table of results, an outside value entering once
local n = placeholder(int32, "[]")
local k = while_loop(function(k) return less(k, n) end, function(k) return {k + 3} end, 0)
check(value(k, {[n] = 10}) == 12, "single variable, table of results")
-- a growing vector with a shape invariant
local g = while_loop(function(g) return less(size(g), n) end, function(g) return concat({g, g * 2}, 0) end,
                     {constant({1.0})}, {shape_invariants = {{-1}}})
check(run(g, {[n] = 5}):shape()[1] == 8, "growing vector")
-- maximum_iterations
local m = while_loop(function(m) return constant(true) end, function(m) return m + 1 end, {0},
                     {maximum_iterations = 25, parallel_iterations = 4})
check(value(m) == 25, "maximum_iterations stops an endless loop")
-- nested: a loop in a loop, a cond in the body
local _, total = while_loop(function(o, t) return less(o, 4) end, function(o, t)
  local _, t2 = while_loop(function(j, u) return less(j, o + 1) end, function(j, u)
    return j + 1, u + cond(equal(mod(j, 2), 0), function() return j end, function() return j * 10 end)
  end, {0, t})
  return o + 1, t2
end, {0, 0})
local lt = 0
for o = 0, 3 do for j = 0, o do lt = lt + (j % 2 == 0 and j or 10 * j) end end
check(value(total) == lt, "a cond in a loop in a loop")

-- traces: one entry per iteration for a node inside the loop, with its frame and iteration
local c0 = constant(0)
local cnt = while_loop(function(c) return less(c, 5) end, function(c) return c + 2 end, {c0}, {name = "traced"})
local _, trace = run(cnt, nil, {trace = true})
local iterations, frame = {}, nil
for _, t in ipairs(trace) do
  if t.op == "Add" and t.frame then iterations[#iterations + 1] = t.iteration; frame = t.frame end
end
table.sort(iterations)
check(#iterations == 3 and iterations[1] == 0 and iterations[3] == 2 and frame == "traced", "iterations in traces")

-- errors
raises(while_loop, {"boom"}, function(i) return less(i, 3) end, function(i) error("boom") end, {0})
raises(while_loop, {"unknown option 'bogus'"}, function(i) return less(i, 3) end, function(i) return i + 1 end,
       {0}, {bogus = 1})
raises(while_loop, {"returned 2 values, expected 1"}, function(i) return less(i, 3) end,
       function(i) return i + 1, i end, {0})
raises(while_loop, {"shape invariant", "[2] after an iteration"}, function(g) return less(size(g), 3) end,
       function(g) return concat({g, g}, 0) end, {constant({1.0})})
raises(cond, {"bool scalar"}, x, function() return 1 end, function() return 2 end)
raises(cond, {"int32 in the true branch and float32"}, greater(x, 0), function() return 1 end,
       function() return 1.5 end)
raises(cond, {"true branch gives 1 results, the false branch 2"}, greater(x, 0), function() return 1 end,
       function() return 1, 2 end)
T.done("control_flow")

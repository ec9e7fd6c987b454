-- test_options.lua — every Lua function that takes an options table refuses a key it does not know
-- (a misspelt option was silently ignored), naming the function and its options; constant's shape=
-- fills or reshapes as TensorFlow's tf.constant does. Run by `tide tests/lua/test_options.lua`.
local T = dofile((arg[0]:match("^(.*/)") or "") .. "check.lua")
local check, raises = T.check, T.raises

local x = placeholder(float32, {2})
local c = constant({1.0, 2.0})

-- every function with an options table: an unknown key is an error that lists the known ones
local cases = {
  {"placeholder", function() return placeholder(float32, {2}, {bogus = 1}) end, "name, device"},
  {"constant", function() return constant(1, float32, {bogus = 1}) end, "name, device, shape"},
  {"constant", function() return constant(1, {bogus = 1}) end, "shape"},
  {"variable", function() return variable(zeros{2}, {nam = "w"}) end, "name, trainable, dtype"},
  {"run", function() return run(c, nil, {tarce = true}) end, "trace, timeout"},
  {"minimize", function() local w = variable(1.0); return sgd(0.1):minimize(w * w, {varlist = {w}}) end,
   "var_list, global_step"},
  {"adam", function() return adam(0.1, {beta = 0.9}) end, "beta1, beta2, epsilon"},
  {"momentum", function() return momentum(0.1, 0.9, {nestrov = true}) end, "momentum, nesterov"},
  {"rmsprop", function() return rmsprop(0.1, {beta1 = 0.9}) end, "decay, momentum, epsilon"},
  {"adagrad", function() return adagrad(0.1, {initial = 0.1}) end, "initial_accumulator"},
  {"zeros", function() return zeros({2}, {bogus = 1}) end, "name, device"},
  {"ones", function() return ones({2}, float64, {bogus = 1}) end, "name, device"},
  {"random_uniform", function() return random_uniform({2}, {mean = 1}) end, "minval, maxval"},
  {"random_normal", function() return random_normal({2}, {minval = 1}) end, "mean, stddev"},
  {"truncated_normal", function() return truncated_normal({2}, {std = 1}) end, "mean, stddev"},
  {"sum", function() return sum(c, {keepdims = true}) end, "keep_dims"},
  {"mean", function() return mean(c, 0, {keepdims = true}) end, "keep_dims"},
  {"cast", function() return cast(c, int32, {bogus = 1}) end, "name, device"},
  {"one_hot", function() return one_hot(constant({1}), 3, {on = 2}) end, "on_value, off_value"},
  {"softmax_cross_entropy", function() return softmax_cross_entropy(c, c, {bogus = 1}) end, "name"},
  {"sparse_softmax_cross_entropy", function() return sparse_softmax_cross_entropy(c, c, {bogus = 1}) end, "name"},
  {"stack", function() return stack({c, c}, {axs = 0}) end, "axis, name, device"},
  {"summary", function() return summary("loss", sum(c), {tg = "x"}) end, "name, device"},
  {"load_csv", function() return load_csv("x.csv", {delim = ";"}) end, "delimiter"},
  {"batches", function() return batches({tensor({1, 2})}, 1, {shufle = true}) end, "shuffle"},
}
for _, case in ipairs(cases) do
  local err = raises(case[2], {case[1], "unknown option"})
  check(err:find(case[3], 1, true), case[1] .. " lists its options: " .. err)
end
raises(function() return sgd(0.1, {momentum = 0.9}) end, {"sgd takes no options, got 'momentum'"})
raises(function() return run(c, nil, {trace = 1}) end, {"option trace must be true or false"})
raises(function() return placeholder(float32, {2}, {name = 3}) end, {"option name must be a string"})
raises(function() return adam(0.1, {beta1 = "x"}) end, {"'beta1' must be a number"})
-- the errors name the user's line, also for functions written in Lua (no tail call hides it)
local err = raises(function() local z = zeros({2}, {bogus = 1}); return z end, {"unknown option"})
check(err:find("test_options.lua:%d+:"), "the location is the user's line: " .. err)

-- known options still work
check(run(constant(1, {name = "named_one"})):item() == 1 and node("named_one"), "constant's name")
check(#run(stack({c, c}, {axis = 1})) == 2, "stack's axis in the options")
check(run(sum(constant({{1, 2}, {3, 4}}), 0, {keep_dims = true})):shape()[1] == 1, "keep_dims")
check(sgd(0.1, {}) ~= nil, "an empty options table is fine")

-- constant(value, dtype, {shape=}): one value fills the shape, as many values as it holds reshape
local filled = run(constant(0.1, float32, {shape = {3}}))
check(#filled == 3 and math.abs(filled[3] - 0.1) < 1e-6, "one value fills the shape")
local grid = run(constant({1, 2, 3, 4}, {shape = {2, 2}}))
check(grid:shape()[1] == 2 and grid[2][1] == 3, "as many values reshape")
check(constant(7, {shape = "[2, 3]"}):shape()[2] == 3, "the shape may be a string")
raises(constant, {"3 values cannot fill shape [2, 2]"}, {1, 2, 3}, int32, {shape = {2, 2}})
raises(constant, {"unknown dimensions"}, 1, float32, {shape = {-1}})

T.done("test_options")

-- curves_log.lua — the run log of the curve tests (tests/web/web_http.py; run with `-e ':watch v'`):
-- a summary and a watched scalar fed finite and non-finite values, and a long curve
-- of 3,000 steps with a spike at step 1233 and a NaN at step 2221 (the downsampling must keep both),
-- paced so that the log's writer keeps up; and a node fetched in training and in evaluations.
s = placeholder(float32, "[]", {name = "s"})
v = identity(s, {name = "v"})
summ = summary("v_tag", v)
for _, x in ipairs({1.5, math.huge, -math.huge, 0 / 0, 2.5}) do
  run({summ, v}, {[s] = tensor(x)})
end
l = placeholder(float32, "[]", {name = "l"})
long = summary("long", l)
for i = 1, 3000 do
  local x = math.sin(i / 100)
  if i == 1234 then x = 1e6 elseif i == 2222 then x = 0 / 0 end
  run(long, {[l] = tensor(x)})
  if i % 200 == 0 then -- let the log's writer keep up (its queue drops records when full)
    local t = tide.clock()
    while tide.clock() - t < 0.05 do end
  end
end
-- A node fetched in training steps and evaluated on a training batch and on a test set: three curves
-- (issue 17 bug 5), told apart by the runs' targets and the shapes they fed.
x = placeholder(float32, {-1, 2}, {name = "x"})
w = variable(ones{2, 1}, {name = "w"})
err = mean(square(matmul(x, w)))
step = sgd(0.01):minimize(err)
run(init())
local train_x, test_x = tensor({{1, 2}, {3, 4}}), tensor({{1, 0}, {0, 1}, {1, 1}})
for _ = 1, 4 do
  run({step, err}, {[x] = train_x})
  run(err, {[x] = train_x})
  run(err, {[x] = test_x})
end

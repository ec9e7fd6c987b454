-- make_log.lua — the run log the web tests serve (tests/web/web_http.py, web_load.py): two scopes on two
-- devices (run with `tide --devices 2`), variables, three traced training steps with a summary whose tag
-- is markup, a node with the oddest name the engine allows, and one failed run.
x = placeholder(float32, {4, 3}, {name = "x"})
local h1 = scope("layer1", function()
  return device("/cpu:0", function()
    local W = variable(random_normal({3, 5}, {seed = 1}), {name = "W"})
    return relu(matmul(x, W))
  end)
end)
local h2 = scope("layer2", function()
  return device("/cpu:1", function()
    local W = variable(random_normal({5, 2}, {seed = 2}), {name = "W"})
    return matmul(h1, W)
  end)
end)
odd = identity(h2, {name = "odd/.._-./x-1.y_"})
loss = mean(square(odd))
train = sgd(0.01):minimize(loss)
run(init())
local feed = {[x] = tensor({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {1, 0, 1}})}
for _ = 1, 3 do
  run({train, summary("<script>alert(1)</script>\"\\", loss), loss}, feed, {trace = true})
end
assert(not pcall(run, loss, {[x] = tensor({1, 2})}), "a run with a bad feed should fail")

-- lstm_fashion_mnist.lua — an LSTM written with while_loop: each Fashion-MNIST image is read as a
-- sequence of 28 rows of 28 pixels, one row per iteration; the last hidden state is classified. The
-- gradients flow back through the loop (tide's while_loop gradient runs the iterations in reverse,
-- reading each iteration's values from stacks the forward loop filled). docs/control-flow.md explains it.
--
-- Run: tide examples/lstm_fashion_mnist.lua [EPOCHS [STEPS_PER_EPOCH]]
--   (defaults: 2 epochs of 600 steps, batch 100: about 0.86 test accuracy; STEPS_PER_EPOCH makes a
--   short run, as the tests do). The last line printed is "test accuracy A".
local epochs = tonumber(arg and arg[1]) or 2
local steps = tonumber(arg and arg[2]) or 600
local hidden = 128

data = fashion_mnist()
images = placeholder(float32, {-1, 28, 28, 1})
labels = placeholder(int32, {-1})

-- [28, batch, 28]: the sequence axis first, so that iteration t reads row t with gather.
rows = transpose(reshape(images, {-1, 28, 28}), {1, 0, 2})
batch = slice(shape(images), {0}, {1})
zero_state = fill(concat({batch, constant({hidden})}, 0), 0.0)

-- One weight matrix for the four gates, applied to [x_t, h]; the forget gate's bias starts at 1.
W = variable(truncated_normal({28 + hidden, 4 * hidden}, {stddev = 0.05, seed = 1}))
b = variable(concat({zeros{hidden}, ones{hidden}, zeros{2 * hidden}}, 0))

local function lstm_step(t, h, c)
  local x_t = gather(rows, t)
  local z = matmul(concat({x_t, h}, 1), W) + b
  local i, f, g, o = split(1, z, {num_split = 4})
  c = sigmoid(f) * c + sigmoid(i) * tanh(g)
  h = sigmoid(o) * tanh(c)
  return t + 1, h, c
end

_, h_last = while_loop(function(t, h, c) return less(t, 28) end, lstm_step, {0, zero_state, zero_state})

W_out = variable(truncated_normal({hidden, 10}, {stddev = 0.1, seed = 2}))
b_out = variable(zeros{10})
logits = matmul(h_last, W_out) + b_out
loss = mean(sparse_softmax_cross_entropy(labels, logits))
train = adam(0.003):minimize(loss)
accuracy = mean(cast(equal(argmax(logits, 1), cast(labels, int64)), float32))

run(init())
local t0 = tide.clock()
for epoch = 1, epochs do
  local total = 0
  for step = 1, steps do
    local bx, by = data.train:batch(100)
    total = total + run({loss, train}, {[images] = bx, [labels] = by})[1]:item()
    if step % 100 == 0 then
      print(string.format("epoch %d step %d loss %.4f (%.1f steps/s)", epoch, step, total / step,
                          ((epoch - 1) * steps + step) / (tide.clock() - t0)))
    end
  end
  local acc = run(accuracy, {[images] = data.test.images, [labels] = data.test.labels}):item()
  print(string.format("epoch %d  loss %.4f  test accuracy %.4f", epoch, total / steps, acc))
end
print(string.format("test accuracy %.4f", run(accuracy, {[images] = data.test.images,
                                                         [labels] = data.test.labels}):item()))

-- softmax_fashion_mnist.lua — the talk's MNIST softmax program, written for tide, on Fashion-MNIST.
-- Run: tide examples/softmax_fashion_mnist.lua [EPOCHS]   (default 20; about 0.845 test accuracy)
-- The last line printed is "test accuracy A".
local epochs = tonumber(arg and arg[1]) or 20

data = fashion_mnist()                        -- 60,000 training and 10,000 test images, 28x28x1
images = placeholder(float32, {nil, 28, 28, 1})
labels = placeholder(int32, {-1})             -- {nil} would be {}: use -1 for one unknown dim
x = reshape(images, {-1, 784})

W = variable(zeros{784, 10})
b = variable(zeros{10})
logits = matmul(x, W) + b
y = softmax(logits)

loss = mean(sparse_softmax_cross_entropy(labels, logits))
train = adam(0.001):minimize(loss)            -- symbolic gradients + fused update ops

correct = equal(argmax(y, 1), cast(labels, int64))
accuracy = mean(cast(correct, float32))

run(init())
local steps = data.train:size() // 100
for epoch = 1, epochs do
  local total = 0
  for _ = 1, steps do
    local bx, by = data.train:batch(100)
    local l = run({loss, train}, {[images] = bx, [labels] = by})
    total = total + l[1]:item()
  end
  local acc = run(accuracy, {[images] = data.test.images, [labels] = data.test.labels}):item()
  print(string.format("epoch %2d  loss %.4f  test accuracy %.4f", epoch, total / steps, acc))
end
print(string.format("test accuracy %.4f", run(accuracy, {[images] = data.test.images,
                                                         [labels] = data.test.labels}):item()))

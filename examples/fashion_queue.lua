-- fashion_queue.lua — Fashion-MNIST trained from an input pipeline in the graph (docs/queues.md), no
-- feeds: ReadRecords reads the IDX files 100 records at a time, two queue runner threads enqueue
-- them into a RandomShuffleQueue, and the training step of a 784-128-10 MLP dequeues 100 examples.
--
-- It first measures whether the pipeline overlaps the computation, on STEPS steps each:
--   read_s      the pipeline alone (dequeue_many with nothing to train)
--   compute_s   the training step alone (the dequeue's outputs fed one batch from memory)
--   pipeline_s  training through the queue
-- and prints {"name": "fashion_queue.overlap", ...}: with overlap, pipeline_s is well under
-- read_s + compute_s (the reading runs on the runners' threads while the step computes).
-- Then it trains EPOCHS epochs through the queue until the reader runs out (OUT_OF_RANGE), and ends
-- with "test accuracy A".
-- Usage: tide examples/fashion_queue.lua [EPOCHS] [STEPS] (dir: $TIDE_FASHION_MNIST or Debian's
-- dataset-fashion-mnist)
local epochs = tonumber(arg and arg[1]) or 2
local steps = tonumber(arg and arg[2]) or 200
local dir = os.getenv("TIDE_FASHION_MNIST") or "/usr/share/datasets/fashion-mnist"
local train_files = {dir .. "/train-images-idx3-ubyte.gz", dir .. "/train-labels-idx1-ubyte.gz"}
local test_files = {dir .. "/t10k-images-idx3-ubyte.gz", dir .. "/t10k-labels-idx1-ubyte.gz"}

-- A reader (shared by name: the runners' threads share its position), a shuffle queue and runners.
local function pipeline(name, num_epochs)
  local images, labels = read_records({filenames = train_files, dtypes = {float32, int32}, batch_size = 100,
                                       num_epochs = num_epochs, shared_name = name .. "_reader"})
  local q = queue({dtypes = {float32, int32}, shapes = {{28, 28}, {}}, kind = "shuffle", capacity = 5000,
                   min_after_dequeue = 1000, seed = 1, name = name})
  local enq = enqueue_many(q, {images, labels})
  local coord = coordinator()
  local runner = queue_runner({enq, enq}, {close = queue_close(q),
                                           cancel = queue_close(q, {cancel_pending_enqueues = true})})
  local x, y = dequeue_many(q, 100)
  return {x = x, y = y, coord = coord, runner = runner}
end

local function model(x)
  W1 = variable(truncated_normal({784, 128}, {stddev = 0.05, seed = 1}))
  b1 = variable(zeros{128})
  W2 = variable(truncated_normal({128, 10}, {stddev = 0.05, seed = 2}))
  b2 = variable(zeros{10})
  local h = relu(matmul(reshape(x, {-1, 784}) / 255, W1) + b1)
  return matmul(h, W2) + b2
end

local train_in = pipeline("train", epochs)
local logits = model(train_in.x)
loss = mean(sparse_softmax_cross_entropy(train_in.y, logits))
train = adam(0.001):minimize(loss)
accuracy = mean(cast(equal(argmax(logits, 1), cast(train_in.y, int64)), float32))
run(init())

-- 1. the pipeline alone
local probe = pipeline("probe", 0)
probe.runner:start(probe.coord)
run({probe.x, probe.y}) -- the queue fills up first (min_after_dequeue)
local t0 = tide.clock()
for _ = 1, steps do run({probe.x, probe.y}) end
local read_s = tide.clock() - t0
local bx, by = table.unpack(run({probe.x, probe.y}))
probe.coord:join()

-- 2. the training step alone, fed one batch from memory (feeding the dequeue's outputs cuts it off)
t0 = tide.clock()
for _ = 1, steps do run(train, {[train_in.x] = bx, [train_in.y] = by}) end
local compute_s = tide.clock() - t0

-- 3. training through the queue (its first epoch's first steps)
train_in.runner:start(train_in.coord)
run(train) -- the queue fills up first
t0 = tide.clock()
for _ = 1, steps do run(train) end
local pipeline_s = tide.clock() - t0
print(string.format('{"name": "fashion_queue.overlap", "value": %.3f, "unit": "ratio", "read_s": %.3f, '
                    .. '"compute_s": %.3f, "pipeline_s": %.3f, "steps": %d}', pipeline_s / (read_s + compute_s),
                    read_s, compute_s, pipeline_s, steps))

-- 4. train on until the reader has gone through its epochs and the queue is drained
local done, total, n = steps + 1, 0, 0
while true do
  local ok, result = pcall(run, {loss, train})
  if not ok then
    if not tostring(result):find("OUT_OF_RANGE", 1, true) and not tostring(result):find("is closed", 1, true) then
      error(result)
    end
    break
  end
  total, n, done = total + result[1]:item(), n + 1, done + 1
  if done % 600 == 0 then
    print(string.format("step %d  loss %.4f", done, total / n))
    total, n = 0, 0
  end
end
train_in.coord:join()
print(string.format("trained %d steps (%d epochs of 600) through the queue", done, epochs))

local test_x, test_y = read_records({filenames = test_files, dtypes = {float32, int32}, batch_size = 10000})
local tx, ty = table.unpack(run({test_x, test_y}))
print(string.format("test accuracy %.4f", run(accuracy, {[train_in.x] = tx, [train_in.y] = ty}):item()))

-- fashion_queue.lua — Fashion-MNIST trained from an input pipeline in the graph (docs/queues.md), no
-- feeds: ReadRecords reads the IDX files 100 records at a time, two queue runner threads enqueue
-- them into a RandomShuffleQueue, and the training step of a 784-128-10 MLP dequeues 100 examples.
--
-- It first measures whether the pipeline overlaps the computation, in ROUNDS rounds of STEPS steps:
--   read_s      the pipeline alone (dequeue_many with nothing to train)
--   compute_s   the training step alone (the dequeue's outputs fed one batch from memory)
--   pipeline_s  training through the queue
-- and prints {"name": "fashion_queue.overlap", ...}: the median over the rounds of
-- pipeline_s / (read_s + compute_s), 1 when reading and computing take turns, max/(sum) (printed as
-- "ideal") when the reading runs entirely on the runners' threads while the step computes. Each
-- timed window starts in the steady state: the prefill (a queue holds up to 5,000 records, 50 batches
-- read before the window) is drained by untimed steps first, and the training queue's runners are
-- blocked on a full queue while the other two are timed; the queue's size at each window's start and
-- end is printed with it. Then it trains EPOCHS epochs through the queue until the reader runs out
-- (OUT_OF_RANGE), and ends with "test accuracy A" (EPOCHS 0: the measurement only).
-- Usage: tide examples/fashion_queue.lua [EPOCHS] [STEPS] [ROUNDS] (dir: $TIDE_FASHION_MNIST or Debian's
-- dataset-fashion-mnist)
local epochs = tonumber(arg and arg[1]) or 2
local steps = tonumber(arg and arg[2]) or 200
local rounds = tonumber(arg and arg[3]) or 3
local CAPACITY, MIN_AFTER, BATCH = 5000, 1000, 100
local dir = os.getenv("TIDE_FASHION_MNIST") or "/usr/share/datasets/fashion-mnist"
local train_files = {dir .. "/train-images-idx3-ubyte.gz", dir .. "/train-labels-idx1-ubyte.gz"}
local test_files = {dir .. "/t10k-images-idx3-ubyte.gz", dir .. "/t10k-labels-idx1-ubyte.gz"}
local probe_file = io.open(train_files[1], "rb")
if not probe_file then -- 77: a skip for meson's tests and benchmarks
  io.stderr:write("fashion_queue.lua: no Fashion-MNIST in " .. dir .. " (apt-get install dataset-fashion-mnist, or "
                  .. "set TIDE_FASHION_MNIST)\n")
  os.exit(77)
end
probe_file:close()

-- A reader (shared by name: the runners' threads share its position), a shuffle queue and runners.
local function pipeline(name, num_epochs)
  local images, labels = read_records({filenames = train_files, dtypes = {float32, int32}, batch_size = 100,
                                       num_epochs = num_epochs, shared_name = name .. "_reader"})
  local q = queue({dtypes = {float32, int32}, shapes = {{28, 28}, {}}, kind = "shuffle", capacity = CAPACITY,
                   min_after_dequeue = MIN_AFTER, seed = 1, name = name})
  local enq = enqueue_many(q, {images, labels})
  local coord = coordinator()
  local runner = queue_runner({enq, enq}, {close = queue_close(q),
                                           cancel = queue_close(q, {cancel_pending_enqueues = true})})
  local x, y = dequeue_many(q, BATCH)
  -- CAPACITY - MIN_AFTER at once: it waits until the queue is full (the reading's rate, measured alone)
  local bulk = dequeue_many(q, CAPACITY - MIN_AFTER)
  return {x = x, y = y, bulk = bulk, coord = coord, runner = runner, size = queue_size(q)}
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

local function size_of(p) return run(p.size):item() end

-- Untimed steps until the prefill is drained: the queue back near min_after_dequeue (the reader is
-- the slower side), or it stays near full (the consumer is): at most 80 steps.
local function drain(p, step)
  for _ = 1, 80 do
    if size_of(p) <= MIN_AFTER + 3 * BATCH then return end
    step()
  end
end

-- Waits until p's queue is full, its runners blocked (they would share the cores with a timed window).
local function wait_full(p)
  local t0 = tide.clock()
  while size_of(p) < CAPACITY - BATCH and tide.clock() - t0 < 30 do os.execute("sleep 0.05") end
end

-- One timed window of `steps` calls of step(); the queue's size (if any) at its start and end.
local function window(step, p)
  local before = p and size_of(p) or 0
  local t0 = tide.clock()
  for _ = 1, steps do step() end
  local t = tide.clock() - t0
  return t, before, p and size_of(p) or 0
end

local function median(v)
  local s = {table.unpack(v)}
  table.sort(s)
  return #s % 2 == 1 and s[(#s + 1) / 2] or (s[#s / 2] + s[#s / 2 + 1]) / 2
end

local reads, computes, pipes, ratios, sizes = {}, {}, {}, {}, {}
local started, trained = false, 0
local function train_step() run(train); trained = trained + 1 end
for r = 1, rounds do
  if started then wait_full(train_in) end
  -- 1. the pipeline alone (a pipeline of its own, stopped after): the runners' time to read
  -- CAPACITY - MIN_AFTER records into a queue nothing else takes from (a dequeue of that many waits
  -- until the queue is full), scaled to `steps` batches; the first fill (from empty) is not timed
  local probe = pipeline("probe" .. r, 0)
  probe.runner:start(probe.coord)
  run(probe.bulk)
  local t0 = tide.clock()
  run(probe.bulk)
  local read_s = (tide.clock() - t0) * steps * BATCH / (CAPACITY - MIN_AFTER)
  local bx, by = table.unpack(run({probe.x, probe.y}))
  probe.coord:join()
  -- 2. the training step alone, fed one batch from memory (feeding the dequeue's outputs cuts it off)
  if started then wait_full(train_in) end
  local compute_s = window(function() run(train, {[train_in.x] = bx, [train_in.y] = by}) end)
  -- 3. training through the queue
  if not started then
    train_in.runner:start(train_in.coord)
    train_step() -- the queue fills up first
    started = true
  end
  drain(train_in, train_step)
  local pipeline_s, pb, pe = window(train_step, train_in)
  reads[r], computes[r], pipes[r] = read_s, compute_s, pipeline_s
  ratios[r] = pipeline_s / (read_s + compute_s)
  sizes[r] = string.format("[%d, %d]", pb, pe)
end
local read_s, compute_s, pipeline_s = median(reads), median(computes), median(pipes)
local function list(v, fmt)
  local out = {}
  for i, x in ipairs(v) do out[i] = string.format(fmt, x) end
  return "[" .. table.concat(out, ", ") .. "]"
end
print(string.format('{"name": "fashion_queue.overlap", "value": %.3f, "unit": "ratio", "read_s": %.3f, '
                    .. '"compute_s": %.3f, "pipeline_s": %.3f, "ideal": %.3f, "steps": %d, "rounds": %d, '
                    .. '"round_ratios": %s, "round_read_s": %s, "round_compute_s": %s, "round_pipeline_s": %s, '
                    .. '"queue_sizes": %s, "method": "median over rounds of pipeline_s / (read_s + compute_s) '
                    .. 'for %d steps of %d examples; read_s: the runners filling the queue alone (4000 records, '
                    .. 'scaled); queue_sizes: the training queue at the start and end of each pipeline window"}',
                    median(ratios), read_s, compute_s, pipeline_s,
                    math.max(read_s, compute_s) / (read_s + compute_s), steps, rounds, list(ratios, "%.3f"),
                    list(reads, "%.3f"), list(computes, "%.3f"), list(pipes, "%.3f"),
                    "[" .. table.concat(sizes, ", ") .. "]", steps, BATCH))
if epochs == 0 then
  train_in.coord:join()
  return
end

-- 4. train on until the reader has gone through its epochs and the queue is drained
local done, total, n = trained, 0, 0
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

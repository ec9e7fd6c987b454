-- test_queues.lua — queues, queue runners and checkpoints at the prompt (docs/queues.md,
-- docs/checkpoints.md), run by `tide tests/lua/test_queues.lua`: FIFO order, batches, a shuffle
-- queue's permutation, close and OUT_OF_RANGE, a timeout on an empty queue, a queue runner fed by a
-- counter, saving and restoring variables, keep-the-last-N, and the errors users cause.
local T = dofile((arg[0]:match("^(.*/)") or "") .. "check.lua")
local check, raises = T.check, T.raises

-- FIFO: order and batches
local q = queue({dtypes = {float32}, shapes = {{}}, capacity = 10})
local x = placeholder(float32, "[]")
local enq = enqueue(q, x)
for i = 1, 5 do run(enq, {[x] = i}) end
check(run(queue_size(q)):item() == 5, "size after 5 enqueues")
local one = dequeue(q)
check(run(one):item() == 1, "first in, first out")
local batch = run(dequeue_many(q, 3))
check(batch:shape()[1] == 3 and batch[1] == 2 and batch[3] == 4, "a batch of 3 in order")

-- close: what is left, then OUT_OF_RANGE
run(queue_close(q))
check(run(one):item() == 5, "the last element after close")
raises(function() run(one) end, {"is closed and has insufficient elements"})

-- a timeout on an empty queue ends the wait
local empty = queue({dtypes = {int32}, name = "empty_queue"})
-- (the dequeue's own message says "waiting to dequeue from queue 'empty_queue'"; on a loaded machine the
-- deadline may pass before it waits, and the executor says it)
raises(function() run(dequeue(empty), {}, {timeout = 0.3}) end, {"exceeded its timeout"})

-- a shuffle queue's output is a permutation of its input
local sq = queue({dtypes = {int32}, shapes = {{}}, kind = "shuffle", capacity = 100, seed = 3})
local xs = placeholder(int32, {-1})
local vals = {}
for i = 1, 50 do vals[i] = i end
run(enqueue_many(sq, xs), {[xs] = tensor(vals, int32)})
run(queue_close(sq))
local got = run(dequeue_many(sq, 50))
local seen, moved = {}, 0
for i = 1, 50 do
  local v = got[i]
  seen[v] = (seen[v] or 0) + 1
  if v ~= i then moved = moved + 1 end
end
local all_once = true
for i = 1, 50 do all_once = all_once and seen[i] == 1 end
check(all_once and moved > 25, "a permutation, shuffled")

-- a queue runner fed by a counter; join stops it
local counter = variable(constant(0, int64), {name = "counter"})
run(init())
local rq = queue({dtypes = {int64}, shapes = {{}}, capacity = 4})
local coord = coordinator()
local runner = queue_runner({enqueue(rq, assign_add(counter, 1))},
                            {close = queue_close(rq), cancel = queue_close(rq, {cancel_pending_enqueues = true})})
runner:start(coord)
local d = dequeue(rq)
local last = 0
for i = 1, 20 do
  local v = run(d):item()
  check(v > last, "the counter's values in order")
  last = v
end
coord:join()
check(coord:should_stop() and runner:runs() >= 20, "the runner stopped after at least 20 enqueues")

-- errors
raises(function() queue({dtypes = {float32}, kind = "lifo"}) end, {"kind must be 'fifo', 'shuffle' or 'padding'"})
raises(function() run(enqueue(q, {x, x}), {[x] = 1}) end, {"takes elements of 1 component, not 2"})
raises(function() dequeue_many(q, -1) end, {"n must be an integer >= 0"})

-- checkpoints
local dir = os.tmpname()
os.remove(dir)
os.execute("mkdir -p " .. dir)
local W = variable(ones{2, 3}, {name = "W"})
run(init())
local s = saver({max_to_keep = 2})
local p1 = s:save(dir .. "/model", {global_step = 1})
check(p1 == dir .. "/model-1.npz", "save returns the path")
run(assign(W, zeros{2, 3}))
s:save(dir .. "/model", {global_step = 2})
s:save(dir .. "/model", {global_step = 3})
check(io.open(p1) == nil, "the oldest beyond max_to_keep is deleted")
check(latest_checkpoint(dir) == dir .. "/model-3.npz", "latest_checkpoint")
check(latest_checkpoint(dir .. "/none") == nil, "no checkpoint: nil")
s:restore(dir .. "/model-2")
check(run(reduce_sum(W)):item() == 0, "restored")
local V = variable(ones{4}, {name = "V"})
raises(function() saver():restore(dir .. "/model-3.npz") end, {"has no tensor 'V'"})
raises(function() s:restore(latest_checkpoint(dir .. "/none")) end, {"no checkpoint given"})
os.execute("rm -rf " .. dir)
T.done("test_queues")

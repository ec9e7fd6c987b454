-- test_data.lua — data files and data sets in the tide REPL (repl/lua_data.c): NPY round trips, IDX
-- and CSV files, Fashion-MNIST splits, batch() and batches(), and the errors for missing or bad files.
-- Needs the Debian package dataset-fashion-mnist (/usr/share/datasets/fashion-mnist).
-- Run: build/repl/tide tests/lua/test_data.lua (exit status 1 on the first failed assert).

local T = dofile((arg[0]:match("^(.*/)") or "") .. "check.lua")
local check, raises = T.check, T.raises

local function write_file(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local FMNIST = "/usr/share/datasets/fashion-mnist"
local missing = "/nonexistent-tide-dir/file"

-- ---------------------------------------------------------------- NPY
local path = os.tmpname()
local values = {{1, 2, 3}, {4, 5, 6}}
for _, dt in ipairs({float32, float64, float16, int8, int16, int32, int64, uint8, uint16, bool}) do
  local t = tensor(values, dt)
  save_npy(path, t)
  local back = load_npy(path)
  check(back:dtype() == dt and back:equal(t), "NPY round trip of " .. tostring(dt))
end
save_npy(path, {{1.5, -2}, {3, 4}})
check(load_npy(path):equal(tensor{{1.5, -2}, {3, 4}}), "save_npy converts a Lua table")
save_npy(path, tensor(7))
check(load_npy(path):rank() == 0 and load_npy(path):item() == 7, "NPY of a scalar")
raises(load_npy, {"load_npy", missing}, missing)
raises(save_npy, {"save_npy", missing}, missing, tensor{1})
raises(save_npy, {"save_npy", "ragged"}, path, {{1}, {1, 2}})
raises(save_npy, {"expected a tensor"}, path)
raises(load_npy, {"expected a file path"}, 42)
write_file(path, "not a numpy file at all")
raises(load_npy, {"load_npy", path, "not a .npy file"}, path)

-- ---------------------------------------------------------------- IDX
local labels_idx = load_idx(FMNIST .. "/t10k-labels-idx1-ubyte.gz")
check(labels_idx:dtype() == uint8 and labels_idx:rank() == 1 and #labels_idx == 10000, "IDX labels")
check(labels_idx[1] == 9 and labels_idx[2] == 2, "the first test labels are 9 (ankle boot), 2 (pullover)")
local images_idx = load_idx(FMNIST .. "/t10k-images-idx3-ubyte.gz")
local s = images_idx:shape()
check(images_idx:dtype() == uint8 and s[1] == 10000 and s[2] == 28 and s[3] == 28, "IDX images")
raises(load_idx, {"load_idx", missing}, missing)
raises(load_idx, {"load_idx", path, "not an IDX file"}, path)

-- ---------------------------------------------------------------- CSV
write_file(path, "x,y,z\n1,2,3\n4,5.5,6\n")
local csv = load_csv(path)
check(csv:dtype() == float32 and csv:equal{{1, 2, 3}, {4, 5.5, 6}}, "CSV with a detected header")
write_file(path, "1;2\n3;4\n")
check(load_csv(path, {delimiter = ";", dtype = int32}):equal{{1, 2}, {3, 4}}, "CSV options")
write_file(path, "# comment line\n1,2\n")
check(load_csv(path, {header = 1}):equal{{1, 2}}, "header = 1 skips a line")
write_file(path, "1,2\n3\n")
raises(load_csv, {"load_csv", path}, path)
raises(load_csv, {"load_csv", missing}, missing)
raises(load_csv, {"unknown option 'delim'", "delimiter, header, dtype"}, path, {delim = ";"})
raises(load_csv, {"delimiter must be a string of one character"}, path, {delimiter = ";;"})
raises(load_csv, {"dtype must be a dtype"}, path, {dtype = "nope"})
raises(load_csv, {"header must be an integer"}, path, {header = "yes"})
os.remove(path)

-- ---------------------------------------------------------------- Fashion-MNIST
local data = fashion_mnist()
check(data.train:size() == 60000 and data.test:size() == 10000, "split sizes")
local ts = data.train.images:shape()
check(data.train.images:dtype() == float32 and ts[1] == 60000 and ts[2] == 28 and ts[3] == 28 and ts[4] == 1,
      "images are float32 [60000, 28, 28, 1]")
check(data.test.labels:dtype() == int32 and #data.test.labels == 10000, "labels are int32 [N]")
check(data.test.labels:equal(labels_idx:cast(int32)), "labels match the IDX file")
check(data.test.images:max_abs_diff((images_idx:cast(float32) / 255):reshape{10000, 28, 28, 1}) < 1e-6,
      "images are the IDX bytes / 255")
check(tostring(data.test):find("10000 examples", 1, true), "a split prints its size")
raises(fashion_mnist, {"fashion_mnist", "/nonexistent-tide-dir"}, "/nonexistent-tide-dir")
local t0 = os.clock()
for _ = 1, 1000 do data.train.images:slice(2, 59999) end
check(os.clock() - t0 < 0.5, "slicing 60000 images is a view (took " .. (os.clock() - t0) .. " s)")

-- split:batches: every example once, in order, as views.
local n, batches_seen, class_count = 0, 0, {}
for x, y in data.test:batches(1000) do
  batches_seen = batches_seen + 1
  check(#x == 1000 and #y == 1000, "full batches")
  if batches_seen == 3 then
    check(x:equal(data.test.images:slice(2001, 3000)) and y:equal(data.test.labels:slice(2001, 3000)),
          "batch 3 holds rows 2001..3000")
  end
  for i = 1, #y do class_count[y[i]] = (class_count[y[i]] or 0) + 1 end
  n = n + #x
end
check(n == 10000 and batches_seen == 10, "batches cover the split")
for c = 0, 9 do check(class_count[c] == 1000, "class " .. c .. " has 1000 test examples") end

-- generic batches: every row exactly once, with and without shuffling.
local idx = {}
for i = 1, 100 do idx[i] = i end
local ids = tensor(idx)
local function pass(bs, opts)
  local seen, order, sizes = {}, {}, {}
  for a, b in batches({ids, ids:cast(float32)}, bs, opts) do
    sizes[#sizes + 1] = #a
    check(a:cast(float32):equal(b), "the tensors of one batch stay aligned")
    for i = 1, #a do
      seen[a[i]] = (seen[a[i]] or 0) + 1
      order[#order + 1] = a[i]
    end
  end
  return seen, order, sizes
end
local seen, order, sizes = pass(7)
local once = true
for i = 1, 100 do once = once and seen[i] == 1 end
check(once and #sizes == 15 and sizes[15] == 2 and order[1] == 1 and order[100] == 100,
      "batches of 7 over 100 rows: 15 batches, in order, the last of 2")
local _, _, dropped = pass(7, {drop_remainder = true})
check(#dropped == 14 and dropped[14] == 7, "drop_remainder drops the last partial batch")
local sseen, sorder = pass(10, {shuffle = true, seed = 5})
once = true
for i = 1, 100 do once = once and sseen[i] == 1 end
local in_order = true
for i = 1, 100 do in_order = in_order and sorder[i] == i end
check(once and not in_order, "a shuffled pass covers every row once, in another order")
local _, sorder2 = pass(10, {shuffle = true, seed = 5})
local _, sorder3 = pass(10, {shuffle = true, seed = 6})
check(table.concat(sorder, ",") == table.concat(sorder2, ","), "one seed, one order")
check(table.concat(sorder, ",") ~= table.concat(sorder3, ","), "another seed, another order")
for a in batches({{1, 2, 3}}, 2) do check(is_tensor(a), "batches converts Lua tables") break end
raises(batches, {"share their first dimension", "[3]", "[2]"}, {tensor{1, 2, 3}, tensor{1, 2}}, 1)
raises(batches, {"tensor 2 is a scalar"}, {tensor{1}, tensor(1)}, 1)
raises(batches, {"batch size must be >= 1"}, {ids}, 0)
raises(batches, {"batch size must be an integer"}, {ids}, "ten")
raises(batches, {"expected a table of tensors"}, ids, 10)
raises(batches, {"unknown option 'shufle'"}, {ids}, 10, {shufle = true})
raises(batches, {"no full batch of 200"}, {ids}, 200, {drop_remainder = true})

-- split:batch: shuffled, n rows each, a new order each epoch. A split over row numbers shows the order.
local rows = setmetatable({images = ids, labels = ids:cast(float32)}, getmetatable(data.test))
check(rows:size() == 100, "a split over any two tensors")
local function epoch(split)
  local got, count = {}, {}
  for _ = 1, 2 do
    local x, y = split:batch(50)
    check(#x == 50 and x:cast(float32):equal(y), "batch() returns aligned batches of n rows")
    for i = 1, 50 do
      got[#got + 1] = x[i]
      count[x[i]] = (count[x[i]] or 0) + 1
    end
  end
  local once_each = true
  for i = 1, 100 do once_each = once_each and count[i] == 1 end
  return table.concat(got, ","), once_each
end
local e1, all1 = epoch(rows)
local e2, all2 = epoch(rows)
check(all1 and all2, "each epoch of batch() covers every row once")
check(e1 ~= e2, "batch() reshuffles each epoch")
rows:shuffle(1234)
local f1 = epoch(rows)
rows:shuffle(1234)
check(epoch(rows) == f1 and f1 ~= e1, "shuffle(seed) restarts in the order the seed draws")
local again = setmetatable({images = ids, labels = ids:cast(float32)}, getmetatable(data.test))
check(epoch(again) == e1, "the default seed is fixed: runs repeat")
raises(function() return rows:batch(101) end, {"no full batch of 101"})
raises(function() return rows:batch(0) end, {"batch size must be >= 1"})
raises(function() return rows.batch({}, 1) end, {"images and labels must be tensors"})
local x, y = data.train:batch(100)
check(#x == 100 and #y == 100 and x:dtype() == float32 and y:dtype() == int32, "Fashion-MNIST batch")

-- the helpers a training loop wants: next_batch (TensorFlow's name), passes that restart, one-hot
-- labels, and a split over any tensors
local nx, ny = data.train:next_batch(100)
check(#nx == 100 and #ny == 100, "next_batch is batch")
local dset = dataset(ids, ids:cast(float32))
check(dset:size() == 100 and tostring(dset):find("100 examples", 1, true), "dataset(images, labels) is a split")
local seen = {}
for _ = 1, 6 do
  local bx = dset:next_batch(40) -- 2 batches an epoch (the remainder is dropped), epoch after epoch
  check(#bx == 40, "next_batch keeps giving full batches across epochs")
  for i = 1, 40 do seen[bx[i]] = true end
end
local count = 0
for i = 1, 100 do count = count + (seen[i] and 1 or 0) end
check(count > 80, "later epochs reach rows earlier ones left out (" .. count .. " of 100 seen)")
raises(dataset, {"share their first dimension"}, ids, tensor{1, 2})
local batches_seen, rows_seen = 0, 0
for bx in batches({ids}, 30, {epochs = 3}) do
  batches_seen = batches_seen + 1
  rows_seen = rows_seen + #bx
end
check(batches_seen == 12 and rows_seen == 300, "epochs = 3: three passes of 4 batches")
local endless = 0
for _ in dset:batches(50, {epochs = math.huge, shuffle = true}) do
  endless = endless + 1
  if endless == 25 then break end
end
check(endless == 25, "epochs = math.huge: passes without end")
raises(batches, {"option epochs must be a whole number >= 1"}, {ids}, 10, {epochs = 0})
raises(batches, {"option epochs must be a whole number >= 1"}, {ids}, 10, {epochs = 1.5})
local hot = fashion_mnist({one_hot = true})
local hs = hot.test.labels:shape()
check(hot.test.labels:dtype() == float32 and hs[1] == 10000 and hs[2] == 10, "one_hot labels: float32 [N, 10]")
check(hot.test.labels[1][data.test.labels[1] + 1] == 1 and sum(hot.test.labels[1]):item() == 1,
      "one_hot labels: a 1 at the class")
raises(fashion_mnist, {"unknown option 'onehot'"}, {onehot = true})

T.done("test_data")

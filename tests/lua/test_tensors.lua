-- test_tensors.lua — host tensors and dtypes in the tide REPL (repl/lua_tensor.c): building from Lua
-- values (dtype inference, conversions, the errors for ragged or odd tables), dtype values, indexing,
-- slicing and reshaping without copies, printing with elision, arithmetic metamethods and shapes.
-- Run: build/repl/tide tests/lua/test_tensors.lua (exit status 1 on the first failed assert).

local T = dofile((arg[0]:match("^(.*/)") or "") .. "check.lua")
local check, raises = T.check, T.raises

local function same_table(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  if #a ~= #b then return false end
  for i = 1, #a do
    if not same_table(a[i], b[i]) then return false end
  end
  return true
end

-- ---------------------------------------------------------------- dtype inference
check(tensor{1, 2, 3}:dtype() == int32, "integers infer int32")
check(tensor{1, 1 << 40}:dtype() == int64, "an integer beyond int32 infers int64")
check(tensor{1, 2.5}:dtype() == float32, "any float infers float32")
check(tensor(3.0):dtype() == float32, "3.0 is a float")
check(tensor(3):dtype() == int32 and tensor(3):rank() == 0, "a number is a scalar")
check(tensor{true, false}:dtype() == bool, "booleans infer bool")
check(tensor{"a", "bc"}:dtype() == tide.string, "strings infer string")
check(same_table(tensor{}:shape(), {0}), "an empty table has shape [0]")
check(same_table(tensor{{}, {}}:shape(), {2, 0}), "empty rows give shape [2, 0]")
check(same_table(tensor{{{1}, {2}}, {{3}, {4}}}:shape(), {2, 2, 1}), "nested tables give the shape")
check(tensor{{{{{{{{1}}}}}}}}:rank() == 8, "eight levels of nesting are allowed")

-- ---------------------------------------------------------------- explicit dtypes
check(tensor({1, 2}, float64):dtype() == float64, "dtype given as a value")
check(tensor({1, 2}, "int8"):dtype() == int8, "dtype given by name")
check(tensor({1, 0, 3}, bool):equal{true, false, true}, "numbers to bool")
check(same_table(tensor({true, false}, float32):totable(), {1.0, 0.0}), "booleans to float32")
check(same_table(tensor({"1.5", "-2"}, float64):totable(), {1.5, -2.0}), "strings parsed as numbers")
check(tensor({1 << 53}, int64)[1] == 1 << 53, "int64 keeps large integers exactly")
check(tensor(tensor{1, 2}, float32):dtype() == float32, "a host tensor is cast")
check(tensor({1.5, 2.25}, float16)[2] == 2.25, "float16 round trip")
raises(tensor, {"1.5 (element 1) is not an integer", "int32"}, {1.5}, int32)
raises(tensor, {"300 (element 2) does not fit in uint8", "0..255"}, {1, 300}, uint8)
raises(tensor, {"-1 does not fit in uint16"}, -1, uint16)
raises(tensor, {"unknown dtype 'flaot32'"}, {1}, "flaot32")
raises(tensor, {"expected a dtype"}, {1}, {})

-- ---------------------------------------------------------------- errors building tensors
raises(tensor, {"ragged table: element 2 has 3 entries, element 1 has 2"}, {{1, 2}, {1, 2, 3}})
raises(tensor, {"ragged table: element [2][1] has 1 entry, element [1][1] has 2"},
       {{{1, 2}}, {{1}}})
raises(tensor, {"ragged table: element 2 is a number, element 1 is a table"}, {{1}, 2})
raises(tensor, {"ragged table: element 2 is a table, element 1 is a number"}, {1, {2}})
raises(tensor, {"table nested deeper than 8"}, {{{{{{{{{1}}}}}}}}})
local loop = {}
loop[1] = loop
raises(tensor, {"table nested deeper than 8"}, loop)
raises(tensor, {"a table holds a function", "element 2"}, {1, print})
raises(tensor, {"a table holds a tensor"}, {tensor{1}})
raises(tensor, {"mixes strings and numbers"}, {1, "a"})
raises(tensor, {"mixes booleans and numbers"}, {{true}, {1}})
raises(tensor, {"has holes", "element 2 is nil"}, {1, nil, 3})
raises(tensor, {"field 'x'"}, {1, 2, x = 3})
raises(tensor, {"cannot make a tensor from nil"}, nil)
raises(tensor, {"expected a value"})

-- ---------------------------------------------------------------- dtype values
local names = {"float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8",
               "uint16", "bool", "complex64", "complex128"}
for _, name in ipairs(names) do
  check(tostring(tide[name]) == name and _G[name] == tide[name], "dtype " .. name)
end
check(tostring(tide.string) == "string" and type(string.format) == "function",
      "tide.string exists and Lua's string library is intact")
check(rawequal(tensor{1.5}:dtype(), float32), "one value per dtype (identity)")
check(float32 == float32 and float32 ~= float64, "dtype equality")
check(getmetatable(float32).__name == "dtype", "dtype __name")
check(is_tensor(tensor{1}) and not is_tensor({1}) and not is_tensor(nil), "is_tensor")

-- ---------------------------------------------------------------- methods
local t = tensor{{1, 2, 3}, {4, 5, 6}}
check(same_table(t:shape(), {2, 3}) and t:rank() == 2 and t:numel() == 6 and #t == 2, "shape queries")
check(getmetatable(t).__name == "tensor", "__name is tensor")
check(t[2][3] == 6 and math.type(t[2][3]) == "integer", "t[i][j] is an integer element")
check(tensor{1.5, 2.5}[2] == 2.5 and tensor{true, false}[2] == false, "float and bool elements")
check(tensor{"ab", "cde"}[2] == "cde", "string elements")
check(t[2]:equal{4, 5, 6} and t[-1]:equal{4, 5, 6} and t[1]:equal{1, 2, 3}, "rows as views")
raises(function() return t[0] end, {"index 0 is out of range for dimension 1 of size 2"})
raises(function() return t[3] end, {"index 3", "size 2"})
raises(function() return t[1.5] end, {"must be an integer", "1.5"})
raises(function() return tensor(1)[1] end, {"cannot index a scalar"})
raises(function() return #tensor(1) end, {"scalar tensor"})
raises(function() t[1] = 5 end, {"tensors are immutable"})
check(t.nonexistent == nil, "an unknown field is nil")

local v = tensor{10, 20, 30, 40, 50}
check(v:slice(2, 4):equal{20, 30, 40}, "slice(i, j) is inclusive")
check(v:slice(4):equal{40, 50}, "slice(i) runs to the end")
check(v:slice(-2):equal{40, 50} and v:slice(-3, -2):equal{30, 40}, "negative bounds count from the end")
check(v:slice(0, 100):equal(v), "bounds are clamped as string.sub does")
check(v:slice(4, 2):numel() == 0 and same_table(t:slice(3):shape(), {0, 3}), "an empty slice")
raises(function() return tensor(1):slice(1) end, {"scalar"})

-- A view costs no copy: two thousand slices of a 600,000-element tensor take no time.
local big = {}
for i = 1, 600000 do big[i] = i end
local rows = tensor(big):reshape{60000, 10}
check(rows[60000][10] == 600000 and rows[2][1] == 11, "reshape keeps row-major order")
local t0 = os.clock()
for _ = 1, 2000 do rows:slice(2, 59999) end
check(os.clock() - t0 < 0.5, "slicing is a view (took " .. (os.clock() - t0) .. " s)")
check(rows:slice(3, 4):equal{{21, 22, 23, 24, 25, 26, 27, 28, 29, 30}, {31, 32, 33, 34, 35, 36, 37, 38, 39, 40}},
      "a slice holds the right rows")

check(same_table(t:reshape{3, -1}:shape(), {3, 2}), "reshape infers -1")
check(same_table(t:reshape{nil, 2}:shape(), {3, 2}), "nil is an unknown dim")
check(same_table(t:reshape(6):shape(), {6}), "one integer is a vector shape")
check(same_table(t:reshape(tensor{3, 2}):shape(), {3, 2}), "an integer tensor is a shape")
check(t:reshape{6}:equal{1, 2, 3, 4, 5, 6}, "reshape keeps the values")
raises(function() return t:reshape{4, 2} end, {"reshape", "[2, 3]"})
raises(function() return t:reshape{1.5} end, {"dimension 1 is 1.5, not an integer"})
raises(function() return t:reshape{-2, 3} end, {"dimension 1 is -2"})
raises(function() return t:reshape{x = 2} end, {"key 'x' is not a dimension index"})
raises(function() return t:reshape{[9] = 1} end, {"at most 8 dimensions"})
raises(function() return t:reshape("abc") end, {"'abc' is not a shape", "[?, 784]"})
raises(function() return t:reshape(true) end, {"a shape is a table of dimensions"})
check(t:reshape("[3, 2]"):shape()[1] == 3, "a shape written as shapes print")
raises(function() return t:reshape(tensor{1.5, 2}) end, {"integer vector"})

check(same_table(t:totable(), {{1, 2, 3}, {4, 5, 6}}), "totable")
check(tensor(2.5):totable() == 2.5, "totable of a scalar is the value")
check(tensor{7}:item() == 7 and tensor{{true}}:item() == true, "item of one element")
raises(function() return t:item() end, {"item", "6 elements", "[2, 3]"})
check(t:cast(float64):dtype() == float64 and t:cast("float32"):equal{{1, 2, 3}, {4, 5, 6}}, "cast")
raises(function() return t:cast("nope") end, {"unknown dtype 'nope'"})
check(t:copy():equal(t) and t:copy() ~= t, "copy")
local nan = tensor{0 / 0, 1}
check(not nan:equal(nan) and nan:equal(nan, true), "equal with nan_equal")
check(not t:equal{{1, 2, 3}, {4, 5, 7}} and not t:equal(t:cast(float32)), "equal compares values and dtypes")
check(not t:equal{{1.5, 2, 3}, {4, 5, 6}}, "a value the dtype cannot hold is not equal")
check(tensor{1.0, 2.0}:max_abs_diff{1.0, 2.5} == 0.5, "max_abs_diff")
check(tensor{1, 2}:max_abs_diff(tensor({1, 2}, float64)) == 0, "max_abs_diff across dtypes")
raises(function() return t:max_abs_diff{1, 2} end, {"shapes differ", "[2, 3]", "[2]"})
raises(function() return tensor{"a"}:max_abs_diff{"a"} end, {"numeric"})
raises(function() return t.shape() end, {"t:shape(...)"})
raises(function() return t:equal({1, {2}}) end, {"ragged"})

-- __close releases the tensor at once; the handle then says so.
local closed = tensor{1, 2}
getmetatable(closed).__close(closed)
raises(function() return closed:shape() end, {"closed"})
do
  local scoped <close> = tensor{1}
  check(scoped[1] == 1, "a to-be-closed tensor")
end

-- ---------------------------------------------------------------- printing
check(tostring(t) == "[[1, 2, 3],\n [4, 5, 6]]", "NumPy-style text: " .. tostring(t))
check(tostring(tensor{true, false}):find("true", 1, true), "booleans print")
local col, row = {}, {}
for i = 1, 2000 do col[i] = {i}; row[i] = i end
local square = tensor(col) + tensor{row}
check(same_table(square:shape(), {2000, 2000}), "broadcast to 2000x2000")
local text = tostring(square)
check(text:find("...", 1, true) and #text < 2000, "a 2000x2000 tensor prints elided (" .. #text .. " chars)")
local thousand = tostring(tensor(big):slice(1, 1000))
check(not thousand:find("...", 1, true), "1000 elements print in full")
check(tostring(tensor(big):slice(1, 1001)):find("...", 1, true), "1001 elements are elided")

-- ---------------------------------------------------------------- arithmetic (eager, host tensors)
local a = tensor{1.0, 2.0, 4.0}
check((a + 1):equal{2, 3, 5} and (1 + a):equal{2, 3, 5}, "__add with a number on either side")
check((a - a):equal{0, 0, 0} and (a * 2):equal{2, 4, 8} and (a / 2):equal{0.5, 1, 2}, "__sub __mul __div")
check((-a):equal{-1, -2, -4} and (a ^ 2):equal{1, 4, 16} and (a % 3):equal{1, 2, 1}, "__unm __pow __mod")
check((tensor{-7.0, 7.0} % 2):equal{1, 1} and (tensor{7.0} % -2):equal{-1}, "% floors as Lua's does")
check(is_tensor(a + a) and (a + a):dtype() == float32, "arithmetic on host tensors gives a host tensor")

-- op functions on host tensors run at once, as arithmetic does: a tensor back, no node in the graph
local ht = tensor({1.0, 2.0})
local logged = log(ht)
check(is_tensor(logged) and math.abs(logged[2] - math.log(2)) < 1e-6, "log of a host tensor is a tensor")
check(is_tensor(exp(ht)) and is_tensor(matmul(tensor({{1, 2}}), tensor({{3}, {4}}))), "exp, matmul eager")
check(sum(tensor({{1, 2}, {3, 4}})):item() == 10 and is_tensor(mean(ht)), "sum and mean over all axes eager")
local oh = one_hot(tensor({0, 2}), 3)
check(is_tensor(oh) and oh[2][3] == 1 and oh[1][1] == 1, "one_hot of host labels eager")
local parts = {split(0, tensor({1, 2, 3, 4}), {num_split = 2})}
check(#parts == 2 and is_tensor(parts[2]) and parts[2][1] == 3, "several outputs: several tensors")
for _, name in ipairs({"log", "exp", "mat_mul", "sum", "one_hot", "split", "const"}) do
  check(not pcall(node, name), "no node '" .. name .. "' was added")
end
check(not is_tensor(log(constant({1.0}))), "a node among the inputs: a node")
check(not is_tensor(matmul(ht:reshape{1, 2}, constant({{1.0}, {2.0}}))), "host and node mixed: a node")

T.done("test_tensors")

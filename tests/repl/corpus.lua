-- corpus.lua — seed statements for tests/repl/fuzz_statements.c, one REPL entry per line. The fuzzer runs
-- them as they are (state builds up: later lines use the globals earlier ones make) and mutates them.
-- Lines starting with "--" and empty lines are skipped. Keep every line cheap (tensors of a few
-- elements), and use no os./io./require/load/quit: the fuzzer removes those from the Lua state.
a = constant({{1.0, 2.0}, {3.0, 4.0}})
b = constant({{0.5, -1.0}, {2.0, 0.25}}, float32, {name = "bee"})
c = constant({1, 2, 3, 4})
i64 = constant({0, 1, 1, 0}, int64)
flag = constant({true, false, true, false})
words = constant({"alpha", "beta", "7"})
x = placeholder(float32, {nil, 2})
xs = placeholder(float32, {2, 2}, {name = "xs"})
xi = placeholder(int32)
s = a + b * 2 - a / 4
p = matmul(a, b, {transpose_b = true})
bm = batch_mat_mul(constant({{{1.0, 2.0}, {3.0, 4.0}}}), constant({{{1.0}, {1.0}}}))
y = relu(matmul(x, a))
r6 = relu6(a - 2) + elu(b) + softplus(a) + sigmoid(b) + tanh(a)
e = exp(a) + log(a) + sqrt(a) + rsqrt(a) + square(b) + abs(b) + neg(b) + sign(b) + sin(a) + cos(a)
m = maximum(a, b) + minimum(a, b) + pow(a, 2) + floor_div(a, b) + mod(a, 3)
lg = logical_and(flag, logical_not(flag))
cmp = tide.select(greater(a, b), a, b)
eqs = {equal(a, b), not_equal(a, b), less(a, b), less_equal(a, b), greater_equal(a, b)}
sm = softmax(a) + log_softmax(b)
sq = reshape(c, {2, 2})
tr = transpose(a, {1, 0})
ex = expand_dims(c, 0)
sqz = squeeze(ex, {squeeze_dims = {0}})
ct = concat({a, b}, 0)
pk = pack({a, b}, {axis = 1})
un1, un2 = unpack(a, {num = 2})
sp1, sp2 = split(1, a, {num_split = 2})
sl = slice(a, {0, 1}, {2, 1})
ss = strided_slice(c, {1}, {3}, {1})
g = gather(c, {3, 0, 1})
oh = one_hot(constant({0, 2, 1}), 3)
tl = tile(a, {2, 1})
pd = pad(a, {{1, 0}, {0, 1}})
fl = fill({2, 3}, 1.5)
rg = range(0, 10, 3)
am = arg_max(a, 1) + arg_min(b, 0)
sh = shape(a) + size(a) + rank(a)
cs = cast(c, float64)
bt = broadcast_to(constant(1.0), {2, 3})
sum(a) + mean(b, 0) + max(a, 1, true)
prod(c) + reduce_min(c)
l2 = l2_loss(a)
ba = bias_add(a, constant({1.0, -1.0}))
ce = softmax_cross_entropy(softmax(b), a)
sce = sparse_softmax_cross_entropy(constant({0, 1}), a)
img = random_uniform({1, 4, 4, 2}, {seed = 3})
conv = conv2d(img, random_normal({2, 2, 2, 3}, {seed = 4}), {strides = {1, 1, 1, 1}, padding = "SAME"})
mp = max_pool(img, {ksize = {1, 2, 2, 1}, strides = {1, 2, 2, 1}, padding = "VALID"})
ap = avg_pool(img, {ksize = {1, 2, 2, 1}, strides = {1, 1, 1, 1}, padding = "SAME"})
mi = matrix_inverse(a) + matrix_determinant(a)
tn = truncated_normal({3, 2}, {seed = 1, stddev = 0.5})
z = zeros{2, 3}
o = ones({2, 2}, float64)
run(s)
run({p, y}, {[x] = {{1, 2}}})
run({sum = s, prod = p})
run(y, {["x:0"] = tensor({{1, -1}, {0.5, 2}})})
run(conv, {}, {trace = true, timeout = 1})
s:eval()
eval(m)
w = variable(random_uniform({2, 2}, {seed = 7}), {name = "w"})
v = variable(zeros{2}, {trainable = false})
loss = sum(square(matmul(a, w) - b))
grad = gradients(loss, w)
gl = gradients({loss, sum(w)}, {w, v})
run(init())
step = sgd(0.01):minimize(loss)
step2 = adam(0.01):minimize(loss, {var_list = {w}, global_step = true})
mo = momentum(0.1, 0.9, {nesterov = true}):minimize(loss)
ad = adagrad(0.1):minimize(loss); rm = rmsprop(0.01):minimize(loss)
run(init()); run(step); run(step2); run(w)
gs = global_step()
w
scope("block", function() inner = relu(a) + 1 end)
device("/cpu:0", function() dev = a * 2 end)
n = node("bee")
a:name(), a:op(), a:shape(), a:dtype(), a:device(), a:inputs()
ses = session(); ses:run(s); ses:close()
t = tensor({{1, 2, 3}, {4, 5, 6}}, float32)
t2 = t:reshape({3, 2}):slice(1, 3)
t[1][2], t:shape(), t:rank(), t:numel(), t:totable(), #t
t + t * 2 - 1, -t, t / 2, t % 2, t ^ 2
t:cast(int64):copy():equal(t), t:max_abs_diff(t)
tensor("text"), tensor(true), tensor(3.5, float16), tensor({1, 2}, complex64)
save_npy("t.npy", t); t3 = load_npy("t.npy")
load_csv("data.csv", {header = 1})
load_idx("small.idx"), load_npy("data.csv"), load_csv("small.idx")
for bx, by in batches({tensor({{1}, {2}, {3}}), tensor({1, 2, 3})}, 2) do last = bx end
for i = 1, 3 do run(step) end
tostring(a), tostring(t), tostring(float32), tostring(sgd(0.1))
:help
:help matmul
:help run
:nodes
:nodes re*
:info a
:info bee
:graph
:history
:save saved.txt
:reset
:load saved.txt
:reset
collectgarbage()
:watch a
:trace on
:runs
:run
:runs 3
:tensor a
:sql SELECT * FROM runs
:log
:trace every 3
:prune 1
:unwatch a
:trace off

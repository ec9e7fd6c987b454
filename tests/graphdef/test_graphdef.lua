-- test_graphdef.lua — import_graph and export_graph from Lua: the result table of handles, scopes, input
-- maps (a placeholder replaced by a node of the REPL's graph), formats, and their errors, which leave
-- the graph as it was.   tide test_graphdef.lua DATA_DIR BUILD_DIR (where mlp.pb is)
local T = dofile(arg[0]:gsub("[^/]*$", "") .. "../lua/check.lua")
local check, raises = T.check, T.raises
local data, built = arg[1], arg[2]
local scratch = os.tmpname()
local function count() return export_graph(scratch) end -- the graph's node count

-- The TensorFlow MLP, fed and run through the handles import_graph returns.
local g = import_graph(data .. "/mlp.pbtxt")
check(g.y and g.x and g.init and g["W/read"], "import_graph returns handles by the GraphDef's names")
run(g.init)
local y = run(g.y, {[g.x] = {{1, 2, 3}}})
check(math.abs(y[1][1] - 0.99944717) < 1e-6, "softmax value " .. tostring(y[1][1]))

-- A scope and an input map: x's uses read z, a node built here.
z = constant({{0.0, 0.0, 1.0}})
local h = import_graph(built .. "/mlp.pb", {scope = "net", input_map = {["x:0"] = z}, format = "binary"})
check(h.y and node("net/y"), "scoped names")
run(h.init)
local v = run(h.y) -- no feed: z flows in
check(math.abs(v[1][1] - 1 / (1 + math.exp(-2.5))) < 1e-6, "input-mapped value " .. tostring(v[1][1]))

-- clear_devices drops the NodeDefs' device requests.
local f0 = io.open(scratch, "w")
f0:write('node { name: "c" op: "Const" device: "/device:GPU:0" attr { key: "dtype" value { type: DT_FLOAT } } ' ..
         'attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 2 } } } }\n')
f0:close()
local gpu = import_graph(scratch, {format = "text", scope = "gpu", clear_devices = true})
check(run(gpu.c):item() == 2, "a GPU request dropped: runs here")

-- Errors name what is wrong and add nothing.
local before = count()
raises(import_graph, {"import_graph: ", "node name 'net/x' is already used"}, data .. "/mlp.pbtxt", {scope = "net"})
raises(import_graph, {"input map entry 'nothere:0': the GraphDef has no node 'nothere'"}, data .. "/mlp.pbtxt",
       {scope = "other", input_map = {["nothere:0"] = z}})
raises(import_graph, {"format must be \"binary\" or \"text\""}, data .. "/mlp.pbtxt", {format = "json"})
raises(import_graph, {"cannot open"}, data .. "/no_such_file.pb")
raises(import_graph, {"input_map's keys are tensor names"}, data .. "/mlp.pbtxt", {input_map = {z}})
check(count() == before, "failed imports added nothing")
check(not pcall(node, "other/x"), "no node of a failed import")

-- export_graph: returns the node count; the text format by option or extension.
local dir = os.tmpname()
os.remove(dir)
local n = export_graph(dir .. ".pbtxt")
check(n == before, "export_graph returns the node count")
local f = assert(io.open(dir .. ".pbtxt"))
local text = f:read("a")
f:close()
check(text:find('name: "net/W/read"', 1, true) and text:find("versions {", 1, true), "text GraphDef")
check(export_graph(dir .. ".bin", {format = "text", output_shapes = false}) == n, "format option")
f = assert(io.open(dir .. ".bin"))
text = f:read("a")
f:close()
check(text:find("node {", 1, true) and not text:find("_output_shapes", 1, true), "output_shapes = false")
os.remove(dir .. ".pbtxt")
os.remove(dir .. ".bin")
os.remove(scratch)
check(tide.help.import_graph:find("import_graph%(path"), "tide.help.import_graph")
T.done("test_graphdef.lua")

-- check.lua — the assertions the Lua test scripts share (tests/lua/test_*.lua load it with dofile):
-- check(cond, msg) counts and asserts; raises(f, {fragments}, ...) wants f(...) to fail with a message
-- holding every fragment (plain text); done(name) prints the count line.
local T = {checks = 0}

function T.check(cond, msg)
  T.checks = T.checks + 1
  assert(cond, msg)
end

function T.raises(f, fragments, ...)
  local ok, err = pcall(f, ...)
  T.checks = T.checks + 1
  assert(not ok, "expected an error containing '" .. fragments[1] .. "'")
  err = tostring(err)
  for _, frag in ipairs(fragments) do
    assert(err:find(frag, 1, true), "error '" .. err .. "' lacks '" .. frag .. "'")
  end
  return err
end

function T.done(name)
  print(string.format("%s: %d checks passed", name, T.checks))
end

return T

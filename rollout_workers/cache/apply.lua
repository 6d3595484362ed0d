-- apply(...): write or delete cached objects of one type with their indexes, in order: the
-- events of one watch batch, or the objects of a relist's page. Each object command covers the
-- whole batch (one HMGET, MGET, HSET, HDEL), whatever its size.
-- KEYS: objects(hash key->json),
--       versions(hash key->'<resourceVersion> <JSON list of the index sets it is in>', and
--       TYPE_RV->the type's resourceVersion),
--       memberships(hash key->JSON list of index sets: the layout before the sets moved into
--       versions, read and dropped for an entry still in it),
--       fence(string: the current leader's fencing token, see cache/fence.py), and the set of
--       the versions hashes holding a copy of it (field FENCE, read with the entries),
--       then per change the object's own key (string: the resourceVersion the object's own
--       controller last wrote)
-- ARGV: the type's new rv ('' keeps; '=' for watch events: the last change applied's), '1' to refuse a change older than the cached object (''
--       for a relist, which is the truth), the writer's fencing token ('' writes unfenced), '1'
--       when the type's objects are reconciled by a controller of ours that records its own
--       writes ('' skips that read), then per change: op 'put'|'del', key, json, rv, JSON list
--       of index set names
-- Returns {fenced, then per change: previous, own, older}: fenced is 1 when the writer's token
-- is not the current leader's and nothing was written; previous is the resourceVersion the
-- change replaced or ''; own is 1 if this put is exactly the object's own controller's last
-- write; older is 1 if the change was older than the object and refused.
local TYPE_RV, FENCE = '!typerv', '!fence'
local type_rv, ordered, token, check_own = ARGV[1], ARGV[2] == '1', ARGV[3], ARGV[4] == '1'
local n = (#ARGV - 4) / 5
local function arg(i, j) return ARGV[4 + 5 * (i - 1) + j] end

local fields = {FENCE}
for i = 1, n do fields[i + 1] = arg(i, 2) end
local got = redis.call('HMGET', KEYS[2], unpack(fields))
if token ~= '' and got[1] ~= token then
  -- No copy of the token here yet (or a writer's other than the current leader's, which is
  -- the current token: whatever increments the token deletes the copies first).
  if got[1] or redis.call('GET', KEYS[4]) ~= token then return {1} end
  redis.call('HSET', KEYS[2], FENCE, token)
  redis.call('SADD', KEYS[5], KEYS[2])
end
local written = {}
if check_own and n > 0 then
  local own = {}
  for i = 1, n do own[i] = KEYS[5 + i] end
  written = redis.call('MGET', unpack(own))
end

-- Each object's state as the batch goes: {rv or false, sets (JSON) or false, moved}.
local state = {}
local out = {0}
local final, order = {}, {}
for i = 1, n do
  local op, k, rv, sets = arg(i, 1), arg(i, 2), arg(i, 4), arg(i, 5)
  local s = state[k]
  if not s then
    s = {false, false, false}
    local entry = got[i + 1]
    if entry then
      local space = string.find(entry, ' ', 1, true)
      if space then
        s = {string.sub(entry, 1, space - 1), string.sub(entry, space + 1), false}
      else
        s = {entry, redis.call('HGET', KEYS[3], k), true}
      end
    end
    state[k] = s
  end
  local previous = s[1]
  -- A watch event older than what the cache holds (a deposed leader's reflector writing what
  -- it read before its lease was taken over) must not put an object back in time.
  -- resourceVersions of one object only grow; a relist after an etcd restore, which may lower
  -- them, passes ''.
  local was, now = tonumber(previous or ''), tonumber(rv)
  if ordered and was and now and now < was then
    out[#out + 1], out[#out + 2], out[#out + 3] = previous, 0, 1
  else
    -- Most events change an object without changing the index entries it is in.
    if op ~= 'put' or s[2] ~= sets then
      local oldsets, newsets, keep = {}, {}, {}
      if s[2] then oldsets = cjson.decode(s[2]) end
      if op == 'put' then newsets = cjson.decode(sets) end
      for _, set in ipairs(newsets) do keep[set] = true end
      for _, set in ipairs(oldsets) do
        if not keep[set] then redis.call('SREM', set, k) end
      end
      for _, set in ipairs(newsets) do redis.call('SADD', set, k) end
    end
    if s[3] then
      redis.call('HDEL', KEYS[3], k)
      s[3] = false
    end
    if not final[k] then order[#order + 1] = k end
    if ARGV[1] == '=' and rv ~= '' then type_rv = rv end
    if op == 'put' then
      final[k] = {arg(i, 3), rv .. ' ' .. sets}
      state[k] = {rv, sets, false}
    else
      final[k] = false
      state[k] = {false, false, false}
    end
    local own = 0
    if op == 'put' and check_own and rv ~= '' and written[i] == rv then own = 1 end
    out[#out + 1], out[#out + 2], out[#out + 3] = previous or '', own, 0
  end
end

local objects, entries, gone = {}, {}, {}
for _, k in ipairs(order) do
  local f = final[k]
  if f then
    objects[#objects + 1], objects[#objects + 2] = k, f[1]
    entries[#entries + 1], entries[#entries + 2] = k, f[2]
  else
    gone[#gone + 1] = k
  end
end
if type_rv ~= '' and type_rv ~= '=' then entries[#entries + 1], entries[#entries + 2] = TYPE_RV, type_rv end
if #objects > 0 then redis.call('HSET', KEYS[1], unpack(objects)) end
if #entries > 0 then redis.call('HSET', KEYS[2], unpack(entries)) end
if #gone > 0 then
  redis.call('HDEL', KEYS[1], unpack(gone))
  redis.call('HDEL', KEYS[2], unpack(gone))
end
return out

-- apply(op, key, json, rv, sets, type_rv): write or delete one cached object with its indexes.
-- KEYS: objects(hash key->json),
--       versions(hash key->'<resourceVersion> <JSON list of the index sets it is in>', and
--       TYPE_RV->the type's resourceVersion),
--       memberships(hash key->JSON list of index sets: the layout before the sets moved into
--       versions, read and dropped for an entry still in it),
--       own(string: the resourceVersion the object's own controller last wrote),
--       fence(string: the current leader's fencing token, see cache/fence.py), and the set of
--       the versions hashes holding a copy of it (field FENCE, read with the object's entry)
-- ARGV: op 'put'|'del', key, json, rv, JSON list of index set names, the type's new rv ('' keeps),
--       '1' to refuse a change older than the cached object ('' for a relist, which is the truth),
--       the writer's fencing token ('' writes unfenced), '1' when the type's objects are
--       reconciled by a controller of ours that records its own writes ('' skips that read)
-- Returns {previous resourceVersion of the object or '', 1 if this put is exactly the object's
-- own controller's last write else 0, 1 if the change was older than the cache and refused,
-- 1 if the writer's token is not the current leader's and nothing was written}.
local TYPE_RV, FENCE = '!typerv', '!fence'
local op, k = ARGV[1], ARGV[2]
local got = redis.call('HMGET', KEYS[2], k, FENCE)
local entry = got[1]
if ARGV[8] ~= '' and got[2] ~= ARGV[8] then
  -- No copy of the token here yet (or a writer's other than the current leader's, which is
  -- the current token: whatever increments the token deletes the copies first).
  if got[2] or redis.call('GET', KEYS[5]) ~= ARGV[8] then return {'', 0, 0, 1} end
  redis.call('HSET', KEYS[2], FENCE, ARGV[8])
  redis.call('SADD', KEYS[6], KEYS[2])
end
local previous, old, moved = nil, nil, false
if entry then
  local space = string.find(entry, ' ', 1, true)
  if space then
    previous, old = string.sub(entry, 1, space - 1), string.sub(entry, space + 1)
  else
    previous, old, moved = entry, redis.call('HGET', KEYS[3], k), true
  end
end
-- A watch event older than what the cache holds (a deposed leader's reflector writing what it
-- read before its lease was taken over) must not put an object back in time. resourceVersions
-- of one object only grow; a relist after an etcd restore, which may lower them, passes ''.
if ARGV[7] == '1' and previous then
  local was, now = tonumber(previous), tonumber(ARGV[4])
  if was and now and now < was then return {previous, 0, 1, 0} end
end
-- Most events change an object without changing the index entries it is in.
if op ~= 'put' or old ~= ARGV[5] then
  local oldsets = {}
  if old then oldsets = cjson.decode(old) end
  local newsets = {}
  if op == 'put' then newsets = cjson.decode(ARGV[5]) end
  local keep = {}
  for _, s in ipairs(newsets) do keep[s] = true end
  for _, s in ipairs(oldsets) do
    if not keep[s] then redis.call('SREM', s, k) end
  end
  for _, s in ipairs(newsets) do redis.call('SADD', s, k) end
end
if moved then redis.call('HDEL', KEYS[3], k) end
if op == 'put' then
  redis.call('HSET', KEYS[1], k, ARGV[3])
  local value = ARGV[4] .. ' ' .. ARGV[5]
  if ARGV[6] ~= '' then
    redis.call('HSET', KEYS[2], k, value, TYPE_RV, ARGV[6])
  else
    redis.call('HSET', KEYS[2], k, value)
  end
else
  redis.call('HDEL', KEYS[1], k)
  redis.call('HDEL', KEYS[2], k)
  if ARGV[6] ~= '' then redis.call('HSET', KEYS[2], TYPE_RV, ARGV[6]) end
end
local own = 0
if op == 'put' and ARGV[9] == '1' and ARGV[4] ~= '' and redis.call('GET', KEYS[4]) == ARGV[4] then
  own = 1
end
return {previous or '', own, 0, 0}

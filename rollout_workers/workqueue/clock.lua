-- clock.lua: Redis' clock in ms, read once a script and only when asked (a script that may
-- need no time reads none). Prepended to every workqueue script.
local clock_ms = nil
local function clock()
  if not clock_ms then
    local t = redis.call('TIME')
    clock_ms = t[1] * 1000 + math.floor(t[2] / 1000)
  end
  return clock_ms
end

-- Settles one admitted request, exactly once: frees its lease and reservation, charges the tokens
-- and the cost it really used to the windows and periods it ended in, and appends its usage entry
-- to the usage stream. A settle for an admission that is not remembered (settled already) is a no-op,
-- so retrying one whose answer was lost counts nothing twice.
--
-- KEYS[1]  the API key's prefix, "cg:k:<key id>"
-- ARGV     1 request id, 2 tokens, 3 cost (nano-dollars), 4 the usage entry (JSON) or "" to
--          record none (an admission given back unused)
-- Returns  {1, the entry's sequence number (0: none), time (ms)}: settled; {0}: already settled
if redis.call('DEL', 'cg:r:' .. ARGV[1]) == 0 then return { 0 } end

local prefix, id = KEYS[1], ARGV[1]
local tokens, cost, entry = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local now = now_ms()
local p = periods(prefix, now)

free_slot(prefix, id)
if tokens > 0 then
  advance(prefix .. ':tk', now)
  push(prefix .. ':tk', now, tokens)
  redis.call('HINCRBY', p.month_key, 'tk', tokens)
end
if cost > 0 then
  redis.call('HINCRBY', p.day_key, 'c', cost)
  redis.call('HINCRBY', p.month_key, 'c', cost)
  redis.call('PEXPIRE', p.day_key, p.day_end + DAY - now)
end
if tokens > 0 or cost > 0 then redis.call('PEXPIRE', p.month_key, p.month_end + DAY - now) end

local seq = 0
if entry ~= '' then
  seq = redis.call('INCR', 'cg:seq')
  redis.call('XADD', 'cg:usage', seq .. '-0', 'e', entry, 't', now)
end
return { 1, seq, now }

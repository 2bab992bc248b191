-- Seeds the period counters from the database's usage, once, when Redis has none (a new or
-- emptied Redis): quotas and budgets then go on from what was spent, and nothing is handed out again.
-- Admissions wait for it (admit.lua answers -1 until cg:ready exists).
--
-- ARGV  1 a new epoch id (tells admissions made before a loss of data from those made after), 2 the day (days since 1970)
--       the caller read the database for, then per key: prefix, requests today, spend today,
--       tokens this month, spend this month
-- Returns  1: seeded; 0: already seeded; -1: the day turned meanwhile (read the database again)
if redis.call('EXISTS', 'cg:ready') == 1 then return 0 end
local now = now_ms()
if math.floor(now / DAY) ~= tonumber(ARGV[2]) then return -1 end
-- Added, not set: settles that arrived while Redis had no counters (their admissions were lost with
-- its data) already counted themselves here, and they are not in the database yet.
for i = 3, #ARGV - 4, 5 do
  local p = periods(ARGV[i], now)
  redis.call('HINCRBY', p.day_key, 'rq', ARGV[i + 1])
  redis.call('HINCRBY', p.day_key, 'c', ARGV[i + 2])
  redis.call('PEXPIRE', p.day_key, p.day_end + DAY - now)
  redis.call('HINCRBY', p.month_key, 'tk', ARGV[i + 3])
  redis.call('HINCRBY', p.month_key, 'c', ARGV[i + 4])
  redis.call('PEXPIRE', p.month_key, p.month_end + DAY - now)
end
redis.call('SET', 'cg:ready', ARGV[1])
return 1

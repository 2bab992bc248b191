-- Admits one request, or refuses it, in one atomic step: every limit is checked against the same
-- state, and an admission counts everything at once; a refusal changes nothing.
--
-- KEYS[1]  the API key's prefix, "cg:k:<key id>"
-- ARGV     1 requests per minute, 2 tokens per minute, 3 max concurrent,
--          4 daily request quota, 5 monthly token quota, 6 daily budget, 7 monthly budget
--          (nano-dollars; -1: none), 8 budget reservation (nano-dollars), 9 request id,
--          10 lease (ms), 11 how long an unsettled admission is remembered (ms)
-- Returns  {1, requests in window, tokens in window, ms until the oldest request leaves, epoch, day,
--          then for each target resting after a 429 (target-rest.lua): its name, ms it still rests}: admitted
--          (day: the UTC day counted in, days since 1970, for a release)
--          {0, reason, retry after (ms), requests in window, tokens in window, ms until the oldest leaves}: refused
--          {-1}: not seeded (the counters were lost, or never set): seed, then ask again
local epoch = redis.call('GET', 'cg:ready')
if not epoch then return { -1 } end

local prefix = KEYS[1]
local rpm, tpm, max_concurrent = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local day_quota, month_quota = tonumber(ARGV[4]), tonumber(ARGV[5])
local day_budget, month_budget = tonumber(ARGV[6]), tonumber(ARGV[7])
local reserve, id, lease_ms, remember_ms = tonumber(ARGV[8]), ARGV[9], tonumber(ARGV[10]), tonumber(ARGV[11])
local now = now_ms()
local p = periods(prefix, now)
local rq_log, tk_log = prefix .. ':rq', prefix .. ':tk'
local leases, reservations = prefix .. ':fl', prefix .. ':rs'

local requests = advance(rq_log, now)
local tokens = advance(tk_log, now)

-- Leases not renewed in time belong to instances that are gone: their slots and reservations lapse.
local lapsed = redis.call('ZRANGEBYSCORE', leases, '-inf', now)
for _, lapsed_id in ipairs(lapsed) do free_slot(prefix, lapsed_id) end

local function refuse(reason, retry_ms)
  return { 0, reason, math.max(retry_ms, 1), requests, tokens, until_oldest_leaves(rq_log, now) }
end

if day_quota >= 0 and tonumber(redis.call('HGET', p.day_key, 'rq') or '0') >= day_quota then
  return refuse('quota_day', p.day_end - now)
end
if month_quota >= 0 and tonumber(redis.call('HGET', p.month_key, 'tk') or '0') >= month_quota then
  return refuse('quota_month', p.month_end - now)
end
if day_budget >= 0 or month_budget >= 0 then
  local reserved = tonumber(redis.call('HGET', reservations, '_t') or '0')
  if day_budget >= 0 and tonumber(redis.call('HGET', p.day_key, 'c') or '0') + reserved >= day_budget then
    return refuse('budget_day', p.day_end - now)
  end
  if month_budget >= 0 and tonumber(redis.call('HGET', p.month_key, 'c') or '0') + reserved >= month_budget then
    return refuse('budget_month', p.month_end - now)
  end
end
if requests >= rpm then return refuse('requests', until_at_most(rq_log, requests, rpm - 1, now)) end
-- Tokens are charged when a request settles, with its real usage; once over, the key waits until
-- enough of the last minute's usage has left the window.
if tokens >= tpm then return refuse('tokens', until_at_most(tk_log, tokens, tpm - 1, now)) end
if redis.call('ZCARD', leases) >= max_concurrent then return refuse('concurrency', 1000) end

requests = push(rq_log, now, 1)
redis.call('HINCRBY', p.day_key, 'rq', 1)
redis.call('PEXPIRE', p.day_key, p.day_end + DAY - now)
redis.call('ZADD', leases, now + lease_ms, id)
redis.call('PEXPIRE', leases, 3 * lease_ms)
if reserve > 0 then
  redis.call('HSET', reservations, id, reserve)
  redis.call('HINCRBY', reservations, '_t', reserve)
  redis.call('PEXPIRE', reservations, 3 * lease_ms)
end
redis.call('SET', 'cg:r:' .. id, '1', 'PX', remember_ms)
local admitted = { 1, requests, tokens, until_oldest_leaves(rq_log, now), epoch, math.floor(now / DAY) }
-- The rests in force go with every admission: an instance learns of another's rest before its next
-- request is sent, at no extra round trip. The hash is small: the targets that answered 429 lately.
local rests = redis.call('HGETALL', 'cg:rests')
for i = 1, #rests, 2 do
  local left = tonumber(rests[i + 1]) - now
  if left > 0 then
    admitted[#admitted + 1] = rests[i]
    admitted[#admitted + 1] = left
  end
end
return admitted

-- Settles one admitted request, exactly once: appends its usage entry to the usage stream, charges
-- the tokens and the cost it really used to the windows and periods it ended in, and frees its
-- lease and reservation.
--
-- Exactly once: admit remembers the admission (cg:r:<id>) and this forgets it, last. A settle for
-- an admission that is forgotten while Redis still runs the epoch it was admitted in was settled
-- already (its answer was lost, and it is sent again): a no-op. One forgotten because Redis lost its
-- data since (a new epoch, or none yet) still counts its usage: the client got its answer.
--
-- The stream's sequence numbers never go back, even when Redis loses its last writes: each is at
-- least the time (ms) x 1000, so numbers handed out after a restart are above every number folded
-- before it.
--
-- KEYS[1]  the API key's prefix, "cg:k:<key id>"
-- ARGV     1 request id, 2 tokens, 3 cost (nano-dollars), 4 the usage entry (JSON) or "" to
--          record none (an admission given back unused), 5 the epoch it was admitted in
-- Returns  {1, sequence number (0: no entry), time (ms)}: settled
--          {2, sequence number, time}: the admission was lost with Redis's data; its usage counted
--          {0}: settled already
local prefix, id = KEYS[1], ARGV[1]
local tokens, cost, entry, epoch = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
local record = 'cg:r:' .. id
local remembered = redis.call('EXISTS', record) == 1
if not remembered and redis.call('GET', 'cg:ready') == epoch then return { 0 } end

local now = now_ms()
local p = periods(prefix, now)

-- The entry first: if it cannot be appended, nothing else is written and a retry is not a no-op.
local seq = 0
if entry ~= '' then
  seq = math.max(tonumber(redis.call('GET', 'cg:seq') or '0') + 1, now * 1000)
  redis.call('XADD', 'cg:usage', string.format('%d-0', seq), 'e', entry, 't', now)
  redis.call('SET', 'cg:seq', string.format('%d', seq))
end

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
if not remembered then return { 2, seq, now } end

free_slot(prefix, id)
redis.call('DEL', record)
return { 1, seq, now }

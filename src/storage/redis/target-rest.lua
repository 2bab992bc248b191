-- Rests a target after its upstream answered 429 with a time to come back: every instance skips it
-- until then (admit.lua hands the rests in force to each admitted request's instance). A rest only
-- ever grows: a shorter one asked later does not cut a longer one short.
--
-- ARGV     1 the target ("<upstream>/<model>"), 2 how long it rests (ms)
-- Returns  ms the target now rests
local target, ms = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local until_ms = math.max(now + ms, tonumber(redis.call('HGET', 'cg:rests', target) or '0'))
redis.call('HSET', 'cg:rests', target, until_ms)
local ttl = redis.call('PTTL', 'cg:rests')
if ttl < until_ms - now then redis.call('PEXPIRE', 'cg:rests', until_ms - now) end
return until_ms - now

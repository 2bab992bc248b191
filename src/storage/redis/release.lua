-- Ends an admitted request that is not one in usage (a token count), exactly once: frees its lease
-- and reservation and gives back its count in the day's request quota. It stays in the request
-- window (it was a request against the rate limit); nothing is charged, no usage entry is written.
--
-- KEYS[1]  the API key's prefix, "cg:k:<key id>"
-- ARGV     1 request id, 2 the day it was admitted in (days since 1970, as admit returned it)
-- Returns  1: released; 0: nothing to release (released already, or lost with Redis's data)
local prefix, id = KEYS[1], ARGV[1]
local record = 'cg:r:' .. id
if redis.call('DEL', record) == 0 then return 0 end
free_slot(prefix, id)
local day_key = prefix .. ':d:' .. ARGV[2]
-- A day hash that expired meanwhile is not made again with a negative count.
if redis.call('HEXISTS', day_key, 'rq') == 1 then redis.call('HINCRBY', day_key, 'rq', -1) end
return 1

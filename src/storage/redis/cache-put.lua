-- Keeps one cached answer and bounds the cache: KEYS[1] the entry, KEYS[2] the index (a sorted set
-- of entries by creation time). ARGV: the entry's JSON, its time to live (ms), its creation time
-- (ms), the most entries kept. The oldest entries go first.
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], KEYS[1])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if over > 0 then
  local oldest = redis.call('ZPOPMIN', KEYS[2], over)
  for i = 1, #oldest, 2 do
    redis.call('DEL', oldest[i])
  end
end
return 1

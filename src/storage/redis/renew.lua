-- Renews the leases of one instance's requests in flight, so they outlive the lease only while the
-- instance that holds them is alive. A lease that lapsed meanwhile (the instance could not reach
-- Redis for longer than a lease) is taken again, with its reservation, for as long as the admission
-- is remembered (not settled yet): the request is still running.
--
-- ARGV  1 lease (ms), then triples: an API key's prefix, a request id, its reservation (nano-dollars)
local lease_ms = tonumber(ARGV[1])
local now = now_ms()
local renewed = 0
for i = 2, #ARGV - 2, 3 do
  local prefix, id, reserve = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  if redis.call('EXISTS', 'cg:r:' .. id) == 1 then
    redis.call('ZADD', prefix .. ':fl', now + lease_ms, id)
    redis.call('PEXPIRE', prefix .. ':fl', 3 * lease_ms)
    if reserve > 0 and redis.call('HSETNX', prefix .. ':rs', id, reserve) == 1 then redis.call('HINCRBY', prefix .. ':rs', '_t', reserve) end
    redis.call('PEXPIRE', prefix .. ':rs', 3 * lease_ms)
    renewed = renewed + 1
  end
end
return renewed

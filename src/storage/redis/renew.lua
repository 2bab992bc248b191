-- Renews the leases of one instance's requests in flight, so they outlive the lease only while the
-- instance that holds them is alive.
--
-- ARGV  1 lease (ms), then pairs: an API key's prefix, a request id
local lease_ms = tonumber(ARGV[1])
local now = now_ms()
local renewed = 0
for i = 2, #ARGV - 1, 2 do
  local leases = ARGV[i] .. ':fl'
  renewed = renewed + redis.call('ZADD', leases, 'XX', 'CH', now + lease_ms, ARGV[i + 1])
  redis.call('PEXPIRE', leases, 3 * lease_ms)
  redis.call('PEXPIRE', ARGV[i] .. ':rs', 3 * lease_ms)
end
return renewed

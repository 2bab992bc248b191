-- Shared by every chatgate script (scripts.ts puts it in front of each one).
--
-- Key layout, for one API key with prefix P = "cg:k:<key id>":
--   P:rq, P:tk   lists of "<ms>:<amount>": requests and tokens of the last minute, oldest first
--   P:rqn, P:tkn their totals (strings), expiring with the lists
--   P:fl         sorted set: in-flight request id -> lease expiry (ms)
--   P:rs         hash: in-flight request id -> budget reservation (nano-dollars); field "_t" = their sum
--   P:d:<day>    hash for a UTC day (days since the epoch): rq (requests admitted), c (spend settled)
--   P:m:<yyyymm> hash for a UTC month: tk (tokens settled), c (spend settled)
-- and, shared: cg:r:<request id> (an admission not settled yet), cg:ready (the seed's epoch),
-- cg:seq (the last usage sequence number), cg:usage (the usage stream). The scripts build these
-- names themselves rather than take them all as KEYS: one Redis server is assumed, not a Cluster.

local WINDOW = 60000
local DAY = 86400000

-- The time, from Redis's clock, so every instance counts on one clock. The limiter's tests pass
-- their own as a last ARGV "now=<ms>"; the gateway never sends an argument of that form.
local function now_ms()
  local last = ARGV[#ARGV]
  if last and string.sub(last, 1, 4) == 'now=' then return tonumber(string.sub(last, 5)) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Civil date of a day number (days since 1970-01-01), after Howard Hinnant's days_from_civil.
local function civil(days)
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400 + (m <= 2 and 1 or 0)
  return y, m
end

-- Day number of the first day of a month.
local function first_of_month(y, m)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = m > 2 and m - 3 or m + 9
  local doy = math.floor((153 * mp + 2) / 5)
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

-- The UTC day and month `now` falls in: their hash keys, and when each ends (ms).
local function periods(prefix, now)
  local day = math.floor(now / DAY)
  local y, m = civil(day)
  local next_y, next_m = y, m + 1
  if next_m == 13 then next_y, next_m = y + 1, 1 end
  return {
    day_key = prefix .. ':d:' .. day,
    day_end = (day + 1) * DAY,
    month_key = prefix .. ':m:' .. (y * 100 + m),
    month_end = first_of_month(next_y, next_m) * DAY,
  }
end

local function split(entry)
  local sep = string.find(entry, ':', 1, true)
  return tonumber(string.sub(entry, 1, sep - 1)), tonumber(string.sub(entry, sep + 1))
end

-- Drops what left the window from a sliding log; returns the total still in it. A log and its
-- total are written together and expire together; an empty log holds nothing, whatever its total.
local function advance(log, now)
  local head = redis.call('LINDEX', log, 0)
  if not head then return 0 end
  local total = tonumber(redis.call('GET', log .. 'n') or '0')
  local dropped = false
  while head do
    local t, amount = split(head)
    if t > now - WINDOW then break end
    total = total - amount
    redis.call('LPOP', log)
    dropped = true
    head = redis.call('LINDEX', log, 0)
  end
  if not head then total = 0 end
  if dropped then redis.call('SET', log .. 'n', total, 'KEEPTTL') end
  return total
end

-- Counts `amount` at `now`; events in one millisecond share an entry (a clock that stepped back is
-- clamped), so a log holds at most 60,000 entries however busy its key.
local function push(log, now, amount)
  local last = redis.call('LINDEX', log, -1)
  local total
  if not last then
    redis.call('RPUSH', log, now .. ':' .. amount)
    total = amount
  else
    local t, counted = split(last)
    if now <= t then
      redis.call('LSET', log, -1, t .. ':' .. (counted + amount))
    else
      redis.call('RPUSH', log, now .. ':' .. amount)
    end
    total = tonumber(redis.call('GET', log .. 'n') or '0') + amount
  end
  redis.call('SET', log .. 'n', total, 'PX', WINDOW + 1000)
  redis.call('PEXPIRE', log, WINDOW + 1000)
  return total
end

-- Milliseconds until the oldest entry leaves the window (0 when the log is empty).
local function until_oldest_leaves(log, now)
  local head = redis.call('LINDEX', log, 0)
  if not head then return 0 end
  local t = split(head)
  return t + WINDOW - now
end

-- Milliseconds until the log's total drops to `target` or below as old entries leave the window.
-- Reads at most 1,000 entries: past that, the time the newest entry leaves is a safe answer (no
-- later than the exact one), and a key refused again and again cannot make Redis read 60,000.
local function until_at_most(log, total, target, now)
  for from = 0, 900, 100 do
    local entries = redis.call('LRANGE', log, from, from + 99)
    if #entries == 0 then return 0 end
    for _, entry in ipairs(entries) do
      local t, amount = split(entry)
      total = total - amount
      if total <= target then return t + WINDOW - now end
    end
  end
  local newest = split(redis.call('LINDEX', log, -1))
  return newest + WINDOW - now
end

-- Frees one request's concurrency lease and budget reservation, if still held.
local function free_slot(prefix, id)
  redis.call('ZREM', prefix .. ':fl', id)
  local reserved = redis.call('HGET', prefix .. ':rs', id)
  if reserved then
    redis.call('HDEL', prefix .. ':rs', id)
    redis.call('HINCRBY', prefix .. ':rs', '_t', -tonumber(reserved))
  end
end

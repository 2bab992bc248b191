-- Counts one upstream request against a provider account's limits (a target: upstream and model),
-- or refuses it, atomically, so instances sharing Redis never send more than the limit in any 60 s.
-- Tokens are charged after each answer (target-charge.lua); once over, the target waits until enough
-- of the last minute's tokens have left the window.
--
-- KEYS[1]  the target's prefix, "cg:t:<upstream>/<model>" (its lists :rq and :tk, as a key's)
-- ARGV     1 requests per minute, 2 tokens per minute (-1: none)
-- Returns  {1}: counted; {0, "rpm" | "tpm", ms until it may be asked}: refused, nothing counted
local prefix = KEYS[1]
local rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms()
local rq_log, tk_log = prefix .. ':rq', prefix .. ':tk'
local requests = advance(rq_log, now)
if rpm >= 0 and requests >= rpm then return { 0, 'rpm', math.max(until_at_most(rq_log, requests, rpm - 1, now), 1) } end
if tpm >= 0 then
  local tokens = advance(tk_log, now)
  if tokens >= tpm then return { 0, 'tpm', math.max(until_at_most(tk_log, tokens, tpm - 1, now), 1) } end
end
push(rq_log, now, 1)
return { 1 }

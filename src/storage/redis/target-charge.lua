-- Charges the tokens an answer of a target used to the target's token window (its account's tpm).
--
-- KEYS[1]  the target's prefix, "cg:t:<upstream>/<model>"
-- ARGV     1 tokens
local tokens = tonumber(ARGV[1])
if tokens > 0 then
  local now = now_ms()
  advance(KEYS[1] .. ':tk', now)
  push(KEYS[1] .. ':tk', now, tokens)
end
return 1

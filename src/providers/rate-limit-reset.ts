/** One duration as OpenAI writes its rate-limit resets ("20ms", "1s", "6m0s", "1h2m3.5s"), in ms. */
function durationMs(text: string | null): number | undefined {
  if (text === null) return undefined
  const parts = /^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$/.exec(text.trim())
  if (!parts || text.trim() === '') return undefined
  const [, h = '0', m = '0', s = '0', ms = '0'] = parts
  return Number(h) * 3_600_000 + Number(m) * 60_000 + Number(s) * 1000 + Number(ms)
}

/**
 * When a 429 without `retry-after` says its limits reset (`x-ratelimit-reset-requests`,
 * `x-ratelimit-reset-tokens`): the reset of the limit that ran out (its `x-ratelimit-remaining-*`
 * is 0), the later if both did; else the sooner reset named. Undefined when it names none.
 */
export function rateLimitResetMs(headers: Headers): number | undefined {
  const resets: { ms: number; spent: boolean }[] = []
  for (const kind of ['requests', 'tokens']) {
    const ms = durationMs(headers.get(`x-ratelimit-reset-${kind}`))
    if (ms !== undefined) resets.push({ ms, spent: headers.get(`x-ratelimit-remaining-${kind}`) === '0' })
  }
  const spent = resets.filter((r) => r.spent)
  if (spent.length > 0) return Math.max(...spent.map((r) => r.ms))
  return resets.length > 0 ? Math.min(...resets.map((r) => r.ms)) : undefined
}

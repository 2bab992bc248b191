import { statusOf } from '../src/http/errors'
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { KeyLimits } from '../src/limits/limiter'
import { MemoryLimiter } from '../src/limits/memory'
import type { UsageEntry } from '../src/usage/entry'
import { TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

/** A request that ended at `at` having used `tokens` (all of them completion tokens). */
const ended = (tokens: number, at: number): UsageEntry => ({
  keyId: 'k',
  alias: 'local/echo',
  upstream: 'local',
  error: false,
  promptTokens: 0,
  completionTokens: tokens,
  costNanos: 0,
  latencyMs: 1,
  at,
})

const limits = (requestsPerMinute: number, maxConcurrent = 1000): KeyLimits => ({
  requestsPerMinute,
  tokensPerMinute: 1_000_000,
  maxConcurrent,
  dailyRequestQuota: null,
  monthlyTokenQuota: null,
  dailyBudgetNanos: null,
  monthlyBudgetNanos: null,
})

describe('sliding-window request limit', () => {
  test('admits exactly the limit, with remaining counting down to 0', async () => {
    const limiter = new MemoryLimiter()
    const remaining: number[] = []
    for (let i = 0; i < 5; i++) {
      const admission = await limiter.admit('k', limits(3), 1_000)
      if (admission.ok) remaining.push(admission.state.remaining)
      else expect(admission.error.code).toBe('rate_limit_exceeded')
    }
    expect(remaining).toEqual([2, 1, 0])
  })

  test('no 2x burst across a window boundary', async () => {
    const limiter = new MemoryLimiter()
    let t = 0
    // Fill the window at the very end of a "minute" ...
    t = 59_000
    for (let i = 0; i < 10; i++) expect((await limiter.admit('k', limits(10), t)).ok).toBe(true)
    // ... and nothing more is admitted at the start of the next one: a fixed window would allow 10 more here.
    t = 61_000
    const refused = await limiter.admit('k', limits(10), t)
    expect(refused.ok).toBe(false)
    if (!refused.ok) expect(String(refused.error.details.retryAfterSeconds)).toBe('58')
    // Only once the first admissions are 60 s old do they free up.
    expect((await limiter.admit('k', limits(10), 119_000)).ok).toBe(true)
  })

  test('refusals consume nothing; reset is whole seconds until the oldest admission expires', async () => {
    const limiter = new MemoryLimiter()
    expect((await limiter.admit('k', limits(2), 0)).ok).toBe(true)
    expect((await limiter.admit('k', limits(2), 30_500)).ok).toBe(true)
    for (let i = 0; i < 5; i++) expect((await limiter.admit('k', limits(2), 40_000)).ok).toBe(false)
    expect(limiter.peek('k', limits(2), 40_000)).toMatchObject({ limit: 2, remaining: 0, resetSeconds: 20 })
    expect(limiter.peek('k', limits(2), 60_000)).toMatchObject({ limit: 2, remaining: 1, resetSeconds: 31 })
  })

  test('keys are independent, and a changed limit applies at once', async () => {
    const limiter = new MemoryLimiter()
    expect((await limiter.admit('a', limits(1), 0)).ok).toBe(true)
    expect((await limiter.admit('a', limits(1), 0)).ok).toBe(false)
    expect((await limiter.admit('b', limits(1), 0)).ok).toBe(true)
    expect((await limiter.admit('a', limits(3), 0)).ok).toBe(true)
    expect(limiter.peek('a', limits(3), 0).remaining).toBe(1)
  })

  test('max_concurrent refuses with Retry-After 1 and frees on release', async () => {
    const limiter = new MemoryLimiter()
    const first = await limiter.admit('k', limits(100, 2), 0)
    const second = await limiter.admit('k', limits(100, 2), 0)
    const third = await limiter.admit('k', limits(100, 2), 0)
    expect(first.ok && second.ok).toBe(true)
    expect(third.ok).toBe(false)
    if (!third.ok) expect(third.error).toMatchObject({ code: 'concurrency_limit_exceeded', details: { retryAfterSeconds: 1 } })
    if (first.ok) {
      await first.settle(ended(0, 0))
      await first.settle(ended(0, 0))
    }
    expect((await limiter.admit('k', limits(100, 2), 0)).ok).toBe(true)
    expect((await limiter.admit('k', limits(100, 2), 0)).ok).toBe(false)
  })
})

describe('tokens per minute', () => {
  const tpm = (tokensPerMinute: number): KeyLimits => ({ ...limits(1000), tokensPerMinute })

  test('real usage is charged after the response; once over, the next request is refused until it ages out', async () => {
    const limiter = new MemoryLimiter()
    const first = await limiter.admit('k', tpm(100), 0)
    expect(first.ok).toBe(true)
    expect(first.state.tokensRemaining).toBe(100)
    if (first.ok) await first.settle(ended(60, 1_000))
    // 60 used: still under the limit, so admitted (a request is only refused once the key is over).
    const second = await limiter.admit('k', tpm(100), 2_000)
    expect(second.state.tokensRemaining).toBe(40)
    if (second.ok) await second.settle(ended(50, 5_000))
    const refused = await limiter.admit('k', tpm(100), 10_000)
    expect(refused.ok).toBe(false)
    if (!refused.ok) {
      expect(refused.error.code).toBe('rate_limit_exceeded')
      expect(refused.error.message).toContain('tokens per minute')
      // The first charge (60 at t=1 s) leaves at t=61 s, bringing the total to 50: 51 s from now.
      expect(String(refused.error.details.retryAfterSeconds)).toBe('51')
    }
    expect((await limiter.admit('k', tpm(100), 61_001)).ok).toBe(true)
  })
})

describe('quotas', () => {
  const quota = (daily: number | null, monthly: number | null): KeyLimits => ({ ...limits(1000), dailyRequestQuota: daily, monthlyTokenQuota: monthly })
  const day = Date.UTC(2026, 10, 22, 23, 59, 0)

  test('daily request quota: refused with Retry-After until 00:00 UTC, starting from the persisted count', async () => {
    const limiter = new MemoryLimiter({
      dayUsage: async (_key: string, d: string) => ({ requests: d === '2026-11-22' ? 8 : 0, costNanos: 0 }),
      monthUsage: async () => ({ tokens: 0, costNanos: 0 }),
      allKeys: async () => new Map(),
    })
    expect((await limiter.admit('k', quota(10, null), day)).ok).toBe(true)
    expect((await limiter.admit('k', quota(10, null), day)).ok).toBe(true)
    const refused = await limiter.admit('k', quota(10, null), day)
    expect(refused.ok).toBe(false)
    if (!refused.ok) {
      expect(statusOf(refused.error)).toBe(429)
      expect(refused.error).toMatchObject({ type: 'rate_limit_error', code: 'quota_exceeded', details: { retryAfterSeconds: 60 } })
    }
    // A new UTC day starts a new count.
    expect((await limiter.admit('k', quota(10, null), day + 61_000)).ok).toBe(true)
  })

  test('monthly token quota: charged with real usage, resets on the 1st', async () => {
    const limiter = new MemoryLimiter({
      dayUsage: async () => ({ requests: 0, costNanos: 0 }),
      monthUsage: async (_key: string, first: string) => ({ tokens: first === '2026-11-01' ? 990 : 0, costNanos: 0 }),
      allKeys: async () => new Map(),
    })
    const admitted = await limiter.admit('k', quota(null, 1000), day)
    if (admitted.ok) await admitted.settle(ended(20, day))
    const refused = await limiter.admit('k', quota(null, 1000), day + 1000)
    expect(refused.ok).toBe(false)
    if (!refused.ok) {
      expect(refused.error.code).toBe('quota_exceeded')
      expect(String(refused.error.details.retryAfterSeconds)).toBe(String(Math.ceil((Date.UTC(2026, 11, 1) - day - 1000) / 1000)))
    }
    expect((await limiter.admit('k', quota(null, 1000), Date.UTC(2026, 11, 1))).ok).toBe(true)
  })
})

test('idle keys are evicted, so memory is bounded by recently active keys', async () => {
  const limiter = new MemoryLimiter()
  for (let i = 0; i < 1000; i++) {
    const admission = await limiter.admit(`key-${i}`, limits(10), 0)
    if (admission.ok) await admission.settle(ended(5, 0))
  }
  const busy = await limiter.admit('busy', limits(10), 0)
  expect(limiter.size).toBe(1001)
  // Three minutes later, the next admission sweeps every idle key; one with a request in flight stays.
  await limiter.admit('fresh', limits(10), 180_000)
  expect(limiter.size).toBe(2)
  if (busy.ok) await busy.settle(ended(0, 180_000))
})

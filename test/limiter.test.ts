import { describe, expect, test } from 'bun:test'
import { MemoryLimiter } from '../src/limits/limiter'

const limits = (requestsPerMinute: number, maxConcurrent = 1000) => ({ requestsPerMinute, tokensPerMinute: 1_000_000, maxConcurrent })

describe('sliding-window request limit', () => {
  test('admits exactly the limit, with remaining counting down to 0', () => {
    const limiter = new MemoryLimiter()
    const remaining: number[] = []
    for (let i = 0; i < 5; i++) {
      const admission = limiter.admit('k', limits(3), 1_000)
      if (admission.ok) remaining.push(admission.state.remaining)
      else expect(admission.error.code).toBe('rate_limit_exceeded')
    }
    expect(remaining).toEqual([2, 1, 0])
  })

  test('no 2x burst across a window boundary', () => {
    const limiter = new MemoryLimiter()
    let t = 0
    // Fill the window at the very end of a "minute" ...
    t = 59_000
    for (let i = 0; i < 10; i++) expect(limiter.admit('k', limits(10), t).ok).toBe(true)
    // ... and nothing more is admitted at the start of the next one: a fixed window would allow 10 more here.
    t = 61_000
    const refused = limiter.admit('k', limits(10), t)
    expect(refused.ok).toBe(false)
    if (!refused.ok) expect(refused.error.headers?.['retry-after']).toBe('58')
    // Only once the first admissions are 60 s old do they free up.
    expect(limiter.admit('k', limits(10), 119_000).ok).toBe(true)
  })

  test('refusals consume nothing; reset is whole seconds until the oldest admission expires', () => {
    const limiter = new MemoryLimiter()
    expect(limiter.admit('k', limits(2), 0).ok).toBe(true)
    expect(limiter.admit('k', limits(2), 30_500).ok).toBe(true)
    for (let i = 0; i < 5; i++) expect(limiter.admit('k', limits(2), 40_000).ok).toBe(false)
    expect(limiter.peek('k', limits(2), 40_000)).toEqual({ limit: 2, remaining: 0, resetSeconds: 20 })
    expect(limiter.peek('k', limits(2), 60_000)).toEqual({ limit: 2, remaining: 1, resetSeconds: 31 })
  })

  test('keys are independent, and a changed limit applies at once', () => {
    const limiter = new MemoryLimiter()
    expect(limiter.admit('a', limits(1), 0).ok).toBe(true)
    expect(limiter.admit('a', limits(1), 0).ok).toBe(false)
    expect(limiter.admit('b', limits(1), 0).ok).toBe(true)
    expect(limiter.admit('a', limits(3), 0).ok).toBe(true)
    expect(limiter.peek('a', limits(3), 0).remaining).toBe(1)
  })

  test('max_concurrent refuses with Retry-After 1 and frees on release', () => {
    const limiter = new MemoryLimiter()
    const first = limiter.admit('k', limits(100, 2), 0)
    const second = limiter.admit('k', limits(100, 2), 0)
    const third = limiter.admit('k', limits(100, 2), 0)
    expect(first.ok && second.ok).toBe(true)
    expect(third.ok).toBe(false)
    if (!third.ok) expect(third.error).toMatchObject({ code: 'concurrency_limit_exceeded', headers: { 'retry-after': '1' } })
    if (first.ok) {
      first.release()
      first.release()
    }
    expect(limiter.admit('k', limits(100, 2), 0).ok).toBe(true)
    expect(limiter.admit('k', limits(100, 2), 0).ok).toBe(false)
  })
})

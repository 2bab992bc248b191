import { GatewayError } from '../errors'

/** The limits in force for one key: its tier's, with the key's own overrides applied. */
export interface KeyLimits {
  requestsPerMinute: number
  tokensPerMinute: number
  maxConcurrent: number
}

/** What the x-ratelimit-* headers report. */
export interface RateLimitState {
  limit: number
  remaining: number
  /** Whole seconds until the window frees a request (0 when nothing is counted). */
  resetSeconds: number
}

export type Admission = { ok: true; state: RateLimitState; release: () => void } | { ok: false; state: RateLimitState; error: GatewayError }

/**
 * The one limiter interface. The in-memory implementation below is exact for one process; a shared
 * store (Redis) can implement the same interface without routes changing.
 */
export interface Limiter {
  /** The key's state without counting anything (for responses refused before admission). */
  peek(keyId: string, limits: KeyLimits, now: number): RateLimitState
  /** Counts the request if every limit allows it; a refusal consumes nothing. */
  admit(keyId: string, limits: KeyLimits, now: number): Admission
}

const WINDOW_MS = 60_000

/** Per-key state: a ring of admission times within the last minute (a sliding log), and in-flight count. */
class KeyWindow {
  stamps: Float64Array
  head = 0
  count = 0
  inFlight = 0

  constructor(capacity: number) {
    this.stamps = new Float64Array(capacity)
  }

  /** Drops admissions older than the window; resizes when the key's limit changed. */
  advance(now: number, limit: number): void {
    while (this.count > 0 && this.stamps[this.head]! <= now - WINDOW_MS) {
      this.head = (this.head + 1) % this.stamps.length
      this.count--
    }
    if (limit !== this.stamps.length) {
      const kept = Math.min(this.count, limit)
      const next = new Float64Array(limit)
      for (let i = 0; i < kept; i++) next[i] = this.stamps[(this.head + this.count - kept + i) % this.stamps.length]!
      this.stamps = next
      this.head = 0
      this.count = kept
    }
  }

  state(now: number, limit: number): RateLimitState {
    const resetSeconds = this.count === 0 ? 0 : Math.max(1, Math.ceil((this.stamps[this.head]! + WINDOW_MS - now) / 1000))
    return { limit, remaining: limit - this.count, resetSeconds }
  }

  push(now: number): void {
    this.stamps[(this.head + this.count) % this.stamps.length] = now
    this.count++
  }
}

/**
 * Exact sliding-window request limit: at most `requestsPerMinute` admissions in any 60 s span, so
 * there is no 2x burst at a window boundary as with fixed windows. Single-threaded JS makes each
 * admit atomic, so concurrency cannot overshoot.
 */
export class MemoryLimiter implements Limiter {
  private readonly windows = new Map<string, KeyWindow>()

  private window(keyId: string, limit: number, now: number): KeyWindow {
    let window = this.windows.get(keyId)
    if (!window) {
      window = new KeyWindow(limit)
      this.windows.set(keyId, window)
    }
    window.advance(now, limit)
    return window
  }

  peek(keyId: string, limits: KeyLimits, now: number): RateLimitState {
    const window = this.windows.get(keyId)
    if (!window) return { limit: limits.requestsPerMinute, remaining: limits.requestsPerMinute, resetSeconds: 0 }
    window.advance(now, limits.requestsPerMinute)
    return window.state(now, limits.requestsPerMinute)
  }

  admit(keyId: string, limits: KeyLimits, now: number): Admission {
    const limit = limits.requestsPerMinute
    const window = this.window(keyId, limit, now)
    if (window.count >= limit) {
      const state = window.state(now, limit)
      const error = new GatewayError(
        429,
        'rate_limit_error',
        `Rate limit reached: ${limit} requests per minute. Try again in ${state.resetSeconds} s.`,
        'rate_limit_exceeded',
        undefined,
        { 'retry-after': String(state.resetSeconds) },
      )
      return { ok: false, state, error }
    }
    if (window.inFlight >= limits.maxConcurrent) {
      const error = new GatewayError(
        429,
        'rate_limit_error',
        `Concurrency limit reached: ${limits.maxConcurrent} requests in flight.`,
        'concurrency_limit_exceeded',
        undefined,
        { 'retry-after': '1' },
      )
      return { ok: false, state: window.state(now, limit), error }
    }
    window.push(now)
    window.inFlight++
    let released = false
    const release = () => {
      if (released) return
      released = true
      window.inFlight--
    }
    return { ok: true, state: window.state(now, limit), release }
  }
}

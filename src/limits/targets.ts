import type { TargetLimits } from '../config/types'
import { MINUTE_MS } from '../time'
import { SlidingLog } from './sliding-log'

/** Why a target was passed over before it was asked: at its account's rpm or tpm. */
export type TargetRefusal = 'rpm' | 'tpm'

export type TargetAdmission = { ok: true } | { ok: false; reason: TargetRefusal; retryMs: number }

/**
 * The provider accounts' own limits, per upstream and model (a target's key, "upstream/model"), and
 * the rests an upstream's 429 asked for. In memory for one instance (MemoryTargetLimiter), in Redis
 * for several (storage/redis/target-limits.ts): exact across instances either way.
 */
export interface TargetLimiter {
  /**
   * Counts one upstream request against the target's window if its rpm and tpm both allow it; a
   * refusal counts nothing. Only called for targets that have limits.
   */
  admit(target: string, limits: TargetLimits, now: number): Promise<TargetAdmission>
  /** Charges the tokens an answer of the target used to its token window (its tpm). */
  charge(target: string, tokens: number, now: number): void
  /** Rests the target for `ms`, on every instance; resolves once the others will see it. */
  rest(target: string, ms: number, now: number): Promise<void>
  /** How long the target still rests, as this instance knows it (0: it does not). Never waits. */
  restingMs(target: string, now: number): number
}

/** A target's windows; dropped once empty and idle for a while, so memory follows the targets in use. */
interface TargetWindows {
  requests: SlidingLog
  tokens: SlidingLog
  lastSeen: number
}

const IDLE_EVICT_MS = 2 * MINUTE_MS

/**
 * Exact for one process: sliding logs as the key limiter keeps them (no 60 s span ever holds more
 * than the limit), decided synchronously, so concurrent requests never overshoot.
 */
export class MemoryTargetLimiter implements TargetLimiter {
  private readonly windows = new Map<string, TargetWindows>()
  private readonly rests = new Map<string, number>()
  private lastSweep = 0

  private of(target: string, now: number): TargetWindows {
    let windows = this.windows.get(target)
    if (!windows) this.windows.set(target, (windows = { requests: new SlidingLog(), tokens: new SlidingLog(), lastSeen: now }))
    windows.lastSeen = Math.max(windows.lastSeen, now)
    windows.requests.advance(now)
    windows.tokens.advance(now)
    return windows
  }

  admit(target: string, limits: TargetLimits, now: number): Promise<TargetAdmission> {
    this.sweep(now)
    const { requests, tokens } = this.of(target, now)
    if (limits.rpm !== null && requests.total >= limits.rpm) {
      return Promise.resolve({ ok: false, reason: 'rpm', retryMs: requests.msUntilTotalAtMost(limits.rpm - 1, now) })
    }
    if (limits.tpm !== null && tokens.total >= limits.tpm) {
      return Promise.resolve({ ok: false, reason: 'tpm', retryMs: tokens.msUntilTotalAtMost(limits.tpm - 1, now) })
    }
    requests.push(now, 1)
    return Promise.resolve({ ok: true })
  }

  charge(target: string, tokens: number, now: number): void {
    if (tokens > 0) this.of(target, now).tokens.push(now, tokens)
  }

  rest(target: string, ms: number, now: number): Promise<void> {
    this.rests.set(target, Math.max(this.rests.get(target) ?? 0, now + ms))
    return Promise.resolve()
  }

  restingMs(target: string, now: number): number {
    const until = this.rests.get(target)
    if (until === undefined) return 0
    if (until > now) return until - now
    this.rests.delete(target)
    return 0
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < MINUTE_MS) return
    this.lastSweep = now
    for (const [target, windows] of this.windows) if (now - windows.lastSeen > IDLE_EVICT_MS) this.windows.delete(target)
  }
}

import { MINUTE_MS, msUntilNextDay, msUntilNextMonth, UtcDays } from '../time'
import type { UsageSink } from '../usage/recorder'
import { type Admission, type KeyLimits, type Limiter, type LimitState, limitState, type QuotaBaseline, untouchedState } from './limiter'
import { type LimitHit, refusalFor } from './refusals'

const WINDOW_MS = MINUTE_MS
/** Keys with nothing in their window and nothing in flight are dropped after this long. */
const IDLE_EVICT_MS = 2 * WINDOW_MS

/** A settle with nothing to record is done at once: one settled promise serves them all. */
const SETTLED: Promise<void> = Promise.resolve()

/**
 * Amounts counted in the last minute with their times, oldest first, in a growable ring (a sliding
 * log). Events in the same millisecond share one entry, so the log holds at most 60,000 entries
 * however busy the key: exact, and bounded in memory.
 */
class SlidingLog {
  private times = new Float64Array(8)
  private amounts = new Float64Array(8)
  private head = 0
  /** Entries held (not events: one entry per millisecond). */
  private count = 0
  /** The sum of the amounts in the window: for the request log, the number of requests. */
  total = 0

  advance(now: number): void {
    while (this.count > 0 && this.times[this.head]! <= now - WINDOW_MS) {
      this.total -= this.amounts[this.head]!
      this.head = (this.head + 1) % this.times.length
      this.count--
    }
  }

  /** Appends an event; a clock that stepped back is clamped so the log stays in time order. */
  push(time: number, amount: number): void {
    this.total += amount
    if (this.count > 0) {
      const last = (this.head + this.count - 1) % this.times.length
      if (time <= this.times[last]!) {
        this.amounts[last]! += amount
        return
      }
    }
    if (this.count === this.times.length) this.grow()
    const at = (this.head + this.count) % this.times.length
    this.times[at] = time
    this.amounts[at] = amount
    this.count++
  }

  /** Milliseconds until the oldest entry leaves the window (0 when empty). */
  msUntilOldestLeaves(now: number): number {
    return this.count === 0 ? 0 : this.times[this.head]! + WINDOW_MS - now
  }

  /** Milliseconds until the total drops to `target` or below as old entries leave the window. */
  msUntilTotalAtMost(target: number, now: number): number {
    let total = this.total
    for (let i = 0; i < this.count && total > target; i++) {
      const at = (this.head + i) % this.times.length
      total -= this.amounts[at]!
      if (total <= target) return this.times[at]! + WINDOW_MS - now
    }
    return 0
  }

  private grow(): void {
    const times = new Float64Array(this.times.length * 2)
    const amounts = new Float64Array(this.times.length * 2)
    for (let i = 0; i < this.count; i++) {
      times[i] = this.times[(this.head + i) % this.times.length]!
      amounts[i] = this.amounts[(this.head + i) % this.times.length]!
    }
    this.times = times
    this.amounts = amounts
    this.head = 0
  }
}

interface KeyState {
  requests: SlidingLog
  tokens: SlidingLog
  inFlight: number
  lastSeen: number
  /** The quota periods the counters below are for. */
  day: string
  requestsToday: number
  month: string
  tokensThisMonth: number
  /** Settled spend in nano-dollars, in the day and month above. */
  spentToday: number
  spentThisMonth: number
  /** What the key's requests in flight reserved of its budgets (nano-dollars). */
  reserved: number
  /** Set while a period's baseline is being read: admissions for the key wait for it. */
  loading: Promise<void> | null
}

/**
 * Exact limits for one process. Requests per minute and tokens per minute are sliding logs: no 60 s
 * span ever holds more than the limit, so there is no 2x burst at a window boundary as with fixed
 * windows. Single-threaded JS makes each decision atomic: concurrency cannot overshoot. Quotas
 * start from the persisted usage counters, read once per key and period, and are then counted in
 * memory; while that read runs, the key's admissions wait for it, and then decide one by one.
 */
export class MemoryLimiter implements Limiter {
  private readonly keys = new Map<string, KeyState>()
  private lastSweep = 0
  private readonly days = new UtcDays()

  constructor(
    private readonly baseline: QuotaBaseline | null = null,
    /** Where settled requests' usage goes (the journaled recorder); null: counted nowhere (tests of limits alone). */
    private readonly usage: UsageSink | null = null,
  ) {}

  /** How many keys are held in memory (for tests of eviction and for metrics). */
  get size(): number {
    return this.keys.size
  }

  private key(keyId: string, now: number): KeyState {
    let state = this.keys.get(keyId)
    if (!state) {
      state = {
        requests: new SlidingLog(),
        tokens: new SlidingLog(),
        inFlight: 0,
        lastSeen: now,
        day: '',
        requestsToday: 0,
        month: '',
        tokensThisMonth: 0,
        spentToday: 0,
        spentThisMonth: 0,
        reserved: 0,
        loading: null,
      }
      this.keys.set(keyId, state)
    }
    state.lastSeen = now
    return state
  }

  /**
   * Moves the quota counters to the current day and month. A new period starts from the persisted
   * counters: they are read (once, whoever asks meanwhile) and added to what was counted since.
   */
  private syncQuotaPeriods(keyId: string, state: KeyState, limits: KeyLimits, now: number): Promise<void> | null {
    if (state.loading) return state.loading
    const day = this.days.of(now)
    const month = day.slice(0, 7)
    const newDay = (limits.dailyRequestQuota !== null || limits.dailyBudgetNanos !== null) && state.day !== day
    const newMonth = (limits.monthlyTokenQuota !== null || limits.monthlyBudgetNanos !== null) && state.month !== month
    if (!newDay && !newMonth) return null
    if (newDay) {
      state.day = day
      state.requestsToday = 0
      state.spentToday = 0
    }
    if (newMonth) {
      state.month = month
      state.tokensThisMonth = 0
      state.spentThisMonth = 0
    }
    const baseline = this.baseline
    if (baseline === null) return null
    const read = Promise.all([newDay ? baseline.dayUsage(keyId, day) : null, newMonth ? baseline.monthUsage(keyId, `${month}-01`) : null]).then(
      ([today, thisMonth]) => {
        state.requestsToday += today?.requests ?? 0
        state.spentToday += today?.costNanos ?? 0
        state.tokensThisMonth += thisMonth?.tokens ?? 0
        state.spentThisMonth += thisMonth?.costNanos ?? 0
      },
      (error: unknown) => {
        // Read again by the next admission; this one fails.
        if (newDay) state.day = ''
        if (newMonth) state.month = ''
        throw error
      },
    )
    state.loading = read.finally(() => (state.loading = null))
    return state.loading
  }

  private stateOf(state: KeyState, limits: KeyLimits, now: number): LimitState {
    return limitState(limits, state.requests.total, state.tokens.total, state.requests.msUntilOldestLeaves(now))
  }

  peek(keyId: string, limits: KeyLimits, now: number): LimitState {
    const state = this.keys.get(keyId)
    if (!state) return untouchedState(limits)
    state.requests.advance(now)
    state.tokens.advance(now)
    return this.stateOf(state, limits, now)
  }

  admit(keyId: string, limits: KeyLimits, now: number, reserveNanos = 0): Promise<Admission> {
    this.sweep(now)
    const state = this.key(keyId, now)
    const loading = this.syncQuotaPeriods(keyId, state, limits, now)
    if (loading === null) return Promise.resolve(this.decide(state, limits, now, reserveNanos))
    return loading.then(() => this.admit(keyId, limits, now, reserveNanos))
  }

  /** Counts the request if every limit allows it. Synchronous: nothing runs between the checks and the count. */
  private decide(state: KeyState, limits: KeyLimits, now: number, reserveNanos: number): Admission {
    state.requests.advance(now)
    state.tokens.advance(now)
    const hit = (limit: LimitHit, waitMs: number): Admission => ({ ok: false, state: this.stateOf(state, limits, now), ...refusalFor(limit, limits, waitMs) })

    if (limits.dailyRequestQuota !== null && state.requestsToday >= limits.dailyRequestQuota) return hit('quota_day', msUntilNextDay(now))
    if (limits.monthlyTokenQuota !== null && state.tokensThisMonth >= limits.monthlyTokenQuota) return hit('quota_month', msUntilNextMonth(now))
    if (limits.dailyBudgetNanos !== null && state.spentToday + state.reserved >= limits.dailyBudgetNanos) return hit('budget_day', msUntilNextDay(now))
    if (limits.monthlyBudgetNanos !== null && state.spentThisMonth + state.reserved >= limits.monthlyBudgetNanos) {
      return hit('budget_month', msUntilNextMonth(now))
    }
    if (state.requests.total >= limits.requestsPerMinute) return hit('requests', state.requests.msUntilTotalAtMost(limits.requestsPerMinute - 1, now))
    // Tokens are charged after each response with its real usage; once over, the key waits until
    // enough of the last minute's usage has left the window.
    if (state.tokens.total >= limits.tokensPerMinute) return hit('tokens', state.tokens.msUntilTotalAtMost(limits.tokensPerMinute - 1, now))
    if (state.inFlight >= limits.maxConcurrent) return hit('concurrency', 1000)

    state.requests.push(now, 1)
    state.requestsToday++
    state.inFlight++
    state.reserved += reserveNanos
    let settled = false
    return {
      ok: true,
      state: this.stateOf(state, limits, now),
      settle: (entry) => {
        if (settled) return SETTLED
        settled = true
        state.inFlight--
        state.reserved -= reserveNanos
        const tokens = entry.promptTokens + entry.completionTokens
        if (tokens > 0) {
          state.tokens.push(entry.at, tokens)
          state.tokensThisMonth += tokens
        }
        if (entry.costNanos > 0) {
          // Charged to the period it ended in; a period the key has not reached yet starts from the store.
          const day = this.days.of(entry.at)
          if (day === state.day) state.spentToday += entry.costNanos
          if (day.slice(0, 7) === state.month) state.spentThisMonth += entry.costNanos
        }
        return this.usage?.record(entry) ?? SETTLED
      },
    }
  }

  /** Drops idle keys so memory stays bounded by the keys active in the last few minutes. */
  private sweep(now: number): void {
    if (now - this.lastSweep < WINDOW_MS) return
    this.lastSweep = now
    for (const [keyId, state] of this.keys) {
      if (state.inFlight === 0 && state.loading === null && now - state.lastSeen > IDLE_EVICT_MS) this.keys.delete(keyId)
    }
  }
}

import { MINUTE_MS, msUntilNextDay, msUntilNextMonth, UtcDays } from '../time'
import type { UsageEntry } from '../usage/entry'
import type { UsageSink } from '../usage/recorder'
import { type Admission, type KeyLimits, type Limiter, type LimitState, limitState, type QuotaBaseline, untouchedState } from './limiter'
import { type LimitHit, refusalFor } from './refusals'
import { SlidingLog } from './sliding-log'

/**
 * Keys with nothing in flight and neither admitted nor settled anything for this long are dropped.
 * Long after their last settle, so the journal (folded every second) has put its usage into the
 * store: a key seen again starts from a baseline that holds it.
 */
const IDLE_EVICT_MS = 2 * MINUTE_MS

/** A settle with nothing to record is done at once: one settled promise serves them all. */
const SETTLED: Promise<void> = Promise.resolve()

interface KeyState {
  requests: SlidingLog
  tokens: SlidingLog
  inFlight: number
  /** The last admission or settle (ms). */
  lastSeen: number
  /** The UTC day ("YYYY-MM-DD") and month ("YYYY-MM") the counters below are for; '' before the first. */
  day: string
  month: string
  requestsToday: number
  tokensThisMonth: number
  /** Settled spend in nano-dollars, in the day and month above. */
  spentToday: number
  spentThisMonth: number
  /** What the key's requests in flight reserved of its budgets (nano-dollars). */
  reserved: number
  /**
   * Whether the counters hold all the key used in their periods: false until the persisted usage
   * (the baseline) has been added. Nothing is admitted for the key before.
   */
  counted: boolean
  /** Set while the baseline is being read: admissions for the key wait for it. */
  loading: Promise<void> | null
}

/**
 * Exact limits for one process. Requests per minute and tokens per minute are sliding logs: no 60 s
 * span ever holds more than the limit, so there is no 2x burst at a window boundary as with fixed
 * windows. Single-threaded JS makes each decision atomic: concurrency cannot overshoot.
 *
 * Quotas and budgets: every key's day and month counters are kept, whether or not a limit uses
 * them, so a quota or a budget that appears mid-period (a PATCH, a reload) starts from what the key
 * already used. They start from the persisted usage, read once when the key is first seen (its
 * admissions wait for that read, then decide one by one), and go on in memory: a new day or month
 * starts from zero without a read, since this process has counted all of it.
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
        month: '',
        requestsToday: 0,
        tokensThisMonth: 0,
        spentToday: 0,
        spentThisMonth: 0,
        reserved: 0,
        counted: this.baseline === null,
        loading: null,
      }
      this.keys.set(keyId, state)
    }
    state.lastSeen = Math.max(state.lastSeen, now)
    return state
  }

  /** Moves the counters on to the day and month `at` falls in (never back: a clock that stepped back keeps them). */
  private roll(state: KeyState, at: number): void {
    const day = this.days.of(at)
    if (day <= state.day) return
    const month = day.slice(0, 7)
    if (month !== state.month) {
      state.month = month
      state.tokensThisMonth = 0
      state.spentThisMonth = 0
    }
    state.day = day
    state.requestsToday = 0
    state.spentToday = 0
  }

  /**
   * The read of the persisted usage for a key not counted yet, started once whoever asks meanwhile.
   * Nothing of the key is in flight here (it had no admission yet), and its last settles, if it
   * was dropped and is seen again, were folded long ago: the store holds all of its past usage,
   * and the counters nothing of it. A failed read fails the admissions waiting for it; the next
   * one reads again.
   */
  private readBaseline(keyId: string, state: KeyState, baseline: QuotaBaseline): Promise<void> {
    const { day, month } = state
    const read = Promise.all([baseline.dayUsage(keyId, day), baseline.monthUsage(keyId, `${month}-01`)]).then(([today, thisMonth]) => {
      if (state.day === day) {
        state.requestsToday += today.requests
        state.spentToday += today.costNanos
      }
      if (state.month === month) {
        state.tokensThisMonth += thisMonth.tokens
        state.spentThisMonth += thisMonth.costNanos
      }
      state.counted = true
    })
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
    let loading = state.loading
    if (loading === null) {
      this.roll(state, now)
      if (state.counted || this.baseline === null) return Promise.resolve(this.decide(state, limits, now, reserveNanos))
      loading = this.readBaseline(keyId, state, this.baseline)
    }
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
    const admittedDay = state.day
    let ended = false
    const end = (): boolean => {
      if (ended) return false
      ended = true
      state.inFlight--
      state.reserved -= reserveNanos
      return true
    }
    return {
      ok: true,
      state: this.stateOf(state, limits, now),
      settle: (entry) => {
        if (!end()) return SETTLED
        this.charge(state, entry)
        return this.usage?.record(entry) ?? SETTLED
      },
      release: () => {
        // Not a request in usage: the daily quota, which restarts from the store's request count, does not count it either.
        if (end() && state.day === admittedDay) state.requestsToday--
        return SETTLED
      },
    }
  }

  /** Charges what a request used to the windows and to the day and month it ended in. */
  private charge(state: KeyState, entry: UsageEntry): void {
    state.lastSeen = Math.max(state.lastSeen, entry.at)
    this.roll(state, entry.at)
    const day = this.days.of(entry.at)
    const tokens = entry.promptTokens + entry.completionTokens
    if (tokens > 0) {
      state.tokens.push(entry.at, tokens)
      if (day.slice(0, 7) === state.month) state.tokensThisMonth += tokens
    }
    if (entry.costNanos > 0) {
      if (day === state.day) state.spentToday += entry.costNanos
      if (day.slice(0, 7) === state.month) state.spentThisMonth += entry.costNanos
    }
  }

  /** Drops idle keys so memory stays bounded by the keys active in the last few minutes. */
  private sweep(now: number): void {
    if (now - this.lastSweep < MINUTE_MS) return
    this.lastSweep = now
    for (const [keyId, state] of this.keys) {
      if (state.inFlight === 0 && state.loading === null && now - state.lastSeen > IDLE_EVICT_MS) this.keys.delete(keyId)
    }
  }
}

import { type Admission, type KeyLimits, type Limiter, type LimitState, limitState, type QuotaBaseline, untouchedState } from '../../limits/limiter'
import { type LimitHit, refusalFor } from '../../limits/refusals'
import { atMostEvery, type Logger } from '../../log'
import { DAY_MS, utcDate } from '../../time'
import type { UsageEntry } from '../../usage/entry'
import { encodeEntry } from '../../usage/journal'
import { repeat } from '../../usage/repeat'
import { limiterUnavailable, type RedisConnection, RedisNotSent } from './connection'
import type { PendingSettles } from './pending'
import { SCRIPTS } from './scripts'

export interface RedisLimiterOptions {
  /** Unique among the instances sharing Redis: request ids and locks carry it. */
  instanceId: string
  /** A concurrency slot lapses this long after its instance last renewed it (renewed every third of it). */
  leaseMs: number
  /** How long an admission not yet settled is remembered: a settle later than this counts nothing. */
  rememberMs: number
  /** Where the counters are seeded from when Redis has none. */
  baseline: QuotaBaseline
  pending: PendingSettles
  log: Logger
  /** Told of each target resting after a 429 that an admission reports: its name and the ms it still rests. */
  onRest?(target: string, ms: number, now: number): void
}

const SETTLED: Promise<void> = Promise.resolve()
/** A key's last known state, for the headers of answers refused before admission; dropped after this long unused. */
const STATE_TTL_MS = 120_000
const prefixOf = (keyId: string) => `cg:k:${keyId}`
const limitArg = (value: number | null) => (value === null ? '-1' : String(value))

/** The usage entry as the stream stores it: without the admission, which only the settle needs (no copy of the entry made for it). */
const streamEntry = (entry: UsageEntry) => JSON.stringify(encodeEntry(entry, false))

/**
 * Limits shared by every instance, kept in Redis. One script admits a request (request window,
 * token window, concurrency, quotas and the budget reservation, all decided at once on Redis's
 * clock), one settles it (frees the slot, charges tokens and cost, appends the usage entry to the
 * usage stream, exactly once): two round trips per request. Concurrency slots are leases that
 * this instance renews while its requests run, so the slots of an instance that died lapse.
 *
 * When Redis is out of reach, admission fails fast with 503 `limiter_unavailable`: no request is
 * served unlimited. A settle that cannot reach it is kept locally (PendingSettles) and sent again
 * until it lands.
 */
export class RedisLimiter implements Limiter {
  private readonly states = new Map<string, { state: LimitState; at: number }>()
  /** This instance's admissions in flight, whose leases it renews: id -> the key's prefix and the reservation. */
  private readonly inFlight = new Map<string, { prefix: string; reserve: number }>()
  private next = 0
  private seeding: Promise<void> | null = null
  private stopTimers: () => void = () => {}
  private lastSweep = 0
  private readonly mayLogError = atMostEvery(1000)

  constructor(
    private readonly redis: RedisConnection,
    private readonly options: RedisLimiterOptions,
  ) {}

  /**
   * What this instance's last admission of the key saw, while it can still hold: until the oldest
   * request it counted leaves the window. Past that, a full window would be reported after it freed.
   */
  peek(keyId: string, limits: KeyLimits, now: number): LimitState {
    const known = this.states.get(keyId)
    if (known && now - known.at < Math.min(STATE_TTL_MS, known.state.resetSeconds * 1000)) return known.state
    return untouchedState(limits)
  }

  async admit(keyId: string, limits: KeyLimits, now: number, reserveNanos = 0): Promise<Admission> {
    // Settles kept while Redis was away go first: their spend counts before anything new is admitted.
    if (this.options.pending.size > 0) await this.replayPending().catch(() => {})
    const prefix = prefixOf(keyId)
    const id = `${this.options.instanceId}:${(++this.next).toString(36)}`
    const args = [
      String(limits.requestsPerMinute),
      String(limits.tokensPerMinute),
      String(limits.maxConcurrent),
      limitArg(limits.dailyRequestQuota),
      limitArg(limits.monthlyTokenQuota),
      limitArg(limits.dailyBudgetNanos),
      limitArg(limits.monthlyBudgetNanos),
      String(reserveNanos),
      id,
      String(this.options.leaseMs),
      String(this.options.rememberMs),
    ]
    let reply: (number | string)[]
    for (let seeded = false; ; seeded = true) {
      try {
        reply = (await this.redis.run(SCRIPTS.admit, [prefix], args)) as (number | string)[]
      } catch (error) {
        // A call that was sent may have run though its answer was lost: give the admission back if it did.
        if (!(error instanceof RedisNotSent)) this.giveBack(prefix, id)
        throw this.unavailable(error)
      }
      if (reply[0] !== -1) break
      if (seeded) throw limiterUnavailable()
      await this.seed()
    }
    this.sweep(now)
    if (reply[0] === 0) {
      const [, hit, retryMs, requests, tokens, resetMs] = reply as [0, LimitHit, number, number, number, number]
      const state = this.remember(keyId, limits, requests, tokens, resetMs, now)
      return { ok: false, state, ...refusalFor(hit, limits, retryMs) }
    }
    const [, requests, tokens, resetMs, epoch, day] = reply as [1, number, number, number, string, number]
    for (let i = 6; i + 1 < reply.length; i += 2) this.options.onRest?.(String(reply[i]), Number(reply[i + 1]), now)
    const state = this.remember(keyId, limits, requests, tokens, resetMs, now)
    this.inFlight.set(id, { prefix, reserve: reserveNanos })
    let ended = false
    const end = (): boolean => {
      if (ended) return false
      ended = true
      this.inFlight.delete(id)
      return true
    }
    return {
      ok: true,
      state,
      settle: (entry) => (end() ? this.settle({ ...entry, admissionId: id, admissionEpoch: epoch }) : SETTLED),
      release: () => (end() ? this.release(prefix, id, day) : SETTLED),
    }
  }

  /**
   * Gives an admission back without a usage entry (release.lua). When Redis cannot be reached, its
   * lease lapses by itself within a lease, and the day's quota keeps counting it: one request too
   * many there, never one too few.
   */
  private async release(prefix: string, id: string, day: number): Promise<void> {
    try {
      await this.redis.run(SCRIPTS.release, [prefix], [id, String(day)])
    } catch (error) {
      this.logError(error, 'releasing a token count in Redis failed; its concurrency slot frees when its lease lapses')
    }
  }

  /** Settles in Redis; when Redis cannot be reached, keeps the settle locally for a replay. */
  private async settle(entry: UsageEntry): Promise<void> {
    try {
      await this.send(entry)
    } catch (error) {
      this.options.pending.keep(entry)
      this.logError(error, 'settling a request in Redis failed; it is kept locally and sent again once Redis answers')
    }
  }

  private async send(entry: UsageEntry): Promise<void> {
    if (entry.admissionId === undefined) throw new Error('a settle without its admission id cannot be sent')
    const tokens = entry.promptTokens + entry.completionTokens
    const [outcome] = (await this.redis.run(
      SCRIPTS.settle,
      [prefixOf(entry.keyId)],
      [entry.admissionId, String(tokens), String(entry.costNanos), streamEntry(entry), entry.admissionEpoch ?? ''],
    )) as number[]
    if (outcome === 2) {
      this.options.log.warn(
        { key_id: entry.keyId },
        'Redis lost the admission of a request it settles (its data was lost or reset): the usage is counted, its limits were reset with the data',
      )
    }
  }

  /** Frees an admission whose answer was lost (a timeout, a dropped connection); a no-op if it was never made. */
  private giveBack(prefix: string, id: string): void {
    // No entry and nothing to charge: when the admission was not made, this changes nothing.
    this.redis.run(SCRIPTS.settle, [prefix], [id, '0', '0', '', '']).catch(() => {})
  }

  private remember(keyId: string, limits: KeyLimits, requests: number, tokens: number, resetMs: number, now: number): LimitState {
    const state = limitState(limits, requests, tokens, resetMs)
    this.states.set(keyId, { state, at: now })
    return state
  }

  /** Drops the remembered states of keys not seen for a while, so memory follows the active keys. */
  private sweep(now: number): void {
    if (now - this.lastSweep < STATE_TTL_MS) return
    this.lastSweep = now
    for (const [keyId, known] of this.states) if (now - known.at >= STATE_TTL_MS) this.states.delete(keyId)
  }

  /**
   * Seeds Redis's period counters from the database when it has none (admit answered -1): one
   * instance does it under a lock, the others wait for it. A Redis that keeps its data (appendonly)
   * is seeded once, when the cluster first starts on it.
   */
  seed(): Promise<void> {
    this.seeding ??= this.seedOnce().finally(() => (this.seeding = null))
    return this.seeding
  }

  private async seedOnce(): Promise<void> {
    const { instanceId, baseline, log } = this.options
    try {
      if ((await this.redis.send('SET', ['cg:seeding', instanceId, 'NX', 'PX', '30000'])) === 'OK') {
        try {
          for (let attempt = 0; attempt < 3; attempt++) {
            // The day on Redis's clock, which the script checks again: a day that turns meanwhile reads again.
            const [seconds] = (await this.redis.send('TIME', [])) as [string, string]
            const now = Number(seconds) * 1000
            const day = utcDate(now)
            const usage = await baseline.allKeys(day, `${day.slice(0, 7)}-01`)
            const args = [crypto.randomUUID(), String(Math.floor(now / DAY_MS))]
            for (const [keyId, u] of usage)
              args.push(prefixOf(keyId), String(u.requestsToday), String(u.costToday), String(u.tokensThisMonth), String(u.costThisMonth))
            const result = await this.redis.run(SCRIPTS.seed, [], args)
            if (result === 1) log.warn({ keys: usage.size }, 'Redis held no limiter counters: seeded them from the usage in the database')
            if (result !== -1) return
          }
          throw new Error('the UTC day kept turning while the counters were seeded')
        } finally {
          await this.redis.send('DEL', ['cg:seeding']).catch(() => {})
        }
      }
      // Another instance seeds: wait for it.
      for (let waited = 0; waited < 5000; waited += 50) {
        if ((await this.redis.send('EXISTS', ['cg:ready'])) === 1) return
        await Bun.sleep(50)
      }
      throw new Error('another instance holds the seeding lock and has not finished')
    } catch (error) {
      throw this.unavailable(error)
    }
  }

  /** Renews this instance's leases and sends kept settles again, until stopped. */
  start(): void {
    const { leaseMs, pending } = this.options
    const renew = repeat(
      async () => {
        if (this.inFlight.size === 0) return
        const args = [String(leaseMs)]
        for (const [id, { prefix, reserve }] of this.inFlight) args.push(prefix, id, String(reserve))
        await this.redis.run(SCRIPTS.renew, [], args)
      },
      leaseMs / 3,
      (error) => this.logError(error, 'renewing concurrency leases in Redis failed'),
    )
    // Kept settles go every second; journals left by processes that died on this data directory are
    // looked for at start and every 10 s (a directory listing).
    let tick = 0
    const replay = repeat(
      async () => {
        if (pending.size > 0 || tick++ % 10 === 0) await this.replayPending()
      },
      1000,
      (error) => this.logError(error, 'sending kept settles to Redis failed; retried in a second'),
    )
    this.stopTimers = () => {
      renew()
      replay()
    }
  }

  /** Sends the settles kept while Redis was away (and those of this host's processes that are gone). */
  replayPending(): Promise<void> {
    return this.options.pending.replay((entry) => this.send(entry))
  }

  /** Stops the timers and sends what is kept one last time; what still cannot go stays in the local journal. */
  async stop(): Promise<void> {
    this.stopTimers()
    await this.replayPending().catch(() => {})
    this.options.pending.close()
  }

  private unavailable(error: unknown) {
    this.logError(error, 'the rate limiter (Redis) is unavailable: requests are refused with 503 until it answers')
    return limiterUnavailable()
  }

  /** Logs a Redis failure at most once a second: an outage must not flood the log. */
  private logError(error: unknown, message: string): void {
    if (!this.mayLogError()) return
    this.options.log.error({ reason: (error as Error)?.message ?? String(error) }, message)
  }
}

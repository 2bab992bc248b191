import { clientClosed, GatewayError } from '../errors'
import type { TargetLimiter } from '../limits/targets'
import { UpstreamError, upstreamTimeout } from '../providers/errors'
import type { AttemptSpan, RequestTrace } from '../observe/tracing/types'
import { type AttemptScope, startAttempt } from './attempt'
import { type CircuitBreakers, targetKey } from './circuit'
import type { UpstreamConnections } from './connections'
import { closedTarget, everyTargetSkipped, overLimit, type Skip, type SkipReason } from './gate'
import type { Measure, TargetLoad, TargetPlan } from './load'
import type { Alias, Target } from './table'

export type { AttemptScope } from './attempt'

/** The targets in the order to try them, by the alias's strategy (the load-following ones need this instance's measurements). */
export function planTargets(alias: Alias, load: TargetLoad | undefined, random: () => number): TargetPlan {
  if (load && alias.strategy === 'least_latency') return load.byLatency(alias)
  if (load && alias.strategy === 'least_busy') return load.byBusy(alias, random)
  return { targets: orderTargets(alias, random), probe: null }
}

/** Targets in the order to try them: as configured, or for `weighted` a weighted draw without replacement. */
export function orderTargets(alias: Alias, random: () => number = Math.random): Target[] {
  if (alias.strategy !== 'weighted') return alias.targets
  const pool = alias.targets.filter((t) => t.weight > 0)
  const ordered: Target[] = []
  while (pool.length > 0) {
    let pick = random() * pool.reduce((sum, t) => sum + t.weight, 0)
    let index = 0
    while (index < pool.length - 1 && pick >= pool[index]!.weight) pick -= pool[index++]!.weight
    ordered.push(...pool.splice(index, 1))
  }
  // Weight 0 keeps a target as a last resort only.
  return ordered.concat(alias.targets.filter((t) => t.weight === 0))
}

const BACKOFF_BASE_MS = 100
const BACKOFF_CAP_MS = 5_000
/** An upstream's retry-after longer than this is not waited for: another target is tried instead. */
const MAX_HONOURED_RETRY_AFTER_MS = 10_000

/** Exponential backoff with jitter (half fixed, half random), or the upstream's own short retry-after. */
export function backoffMs(retry: number, error: UpstreamError, random: () => number = Math.random): number {
  if (error.retryAfterMs !== undefined) return error.retryAfterMs
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** retry)
  return ceiling / 2 + random() * (ceiling / 2)
}

/** How an answered attempt ended, once its response was relayed (or not). */
export type AttemptOutcome = 'ok' | 'failed' | 'abandoned'

/** The attempt that answered: its target, what it returned, and the one way to end it. */
export interface Dispatched<T> {
  target: Target
  value: T
  /**
   * Ends the attempt, once: stops its timers and tells the breaker how it went: `ok`; `failed`
   * (the upstream broke after answering: the breaker counts it, and the upstream is hung up on);
   * `abandoned` (the caller left: no verdict on the upstream, which is hung up on).
   */
  finish(outcome: AttemptOutcome, reason?: GatewayError): void
  /** Keeps the attempt going when the caller disconnects: its timeouts still apply. */
  detachClient(): void
}

export interface DispatchOptions {
  clientSignal: AbortSignal
  circuits: CircuitBreakers
  /** The instance's open upstream requests, bounded. */
  connections: UpstreamConnections
  deadlineMs: number
  now: () => number
  random?: () => number
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
  /** Called as each attempt starts, so response headers name the target that was tried last. */
  onAttempt(target: Target, attempt: number): void
  /** Called for every failed attempt (for logs and metrics). */
  onFailure?(target: Target, error: UpstreamError): void
  /** Called for the attempt that succeeded. */
  onSuccess?(target: Target): void
  /** This instance's measurements of its targets, which `least_latency` and `least_busy` follow; absent: nothing measured. */
  load?: TargetLoad
  /** The providers' own rpm / tpm, and the rests their 429s asked for; absent: none apply. */
  targetLimiter?: TargetLimiter
  /** Called for each target passed over without being asked, and why. */
  onSkip?(target: Target, reason: SkipReason): void
  /** The request's trace when it is traced: each attempt then gets a client span. */
  trace?: RequestTrace
}

/**
 * Starts an attempt, or throws the 503 when the instance has no upstream connection free: that is the
 * instance's own bound, not the target's health, so its circuit gets no verdict, and there is no
 * failover (every other target would be refused alike).
 */
function openAttempt(target: Target, options: DispatchOptions, timeoutMs: number): AttemptScope {
  try {
    return startAttempt(target, options.connections, options.clientSignal, timeoutMs, target.upstream.connectTimeoutMs)
  } catch (refusal) {
    options.circuits.abandon(targetKey(target))
    throw refusal
  }
}

/** The attempt that answered, handed to the caller with the one way to end it. */
function answered<T>(
  target: Target,
  value: T,
  scope: AttemptScope,
  options: DispatchOptions,
  measured?: { load: TargetLoad; measure: Measure },
  span?: AttemptSpan,
): Dispatched<T> {
  const { circuits, now } = options
  const key = targetKey(target)
  let finished = false
  const finish = (outcome: AttemptOutcome, reason?: GatewayError) => {
    if (finished) return
    finished = true
    if (measured) measured.load.ended(measured.measure, outcome === 'ok')
    span?.ended(outcome, reason)
    if (outcome !== 'ok') scope.abort(reason ?? clientClosed())
    scope.end()
    if (outcome === 'ok') circuits.success(key)
    else if (outcome === 'failed') circuits.failure(key, target.upstream, now())
    else circuits.abandon(key)
  }
  return { target, value, finish, detachClient: scope.detachClient }
}

const abortableSleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    signal.addEventListener('abort', onAbort, { once: true })
  })

/** An attempt that failed: its error, and whether the target now rests (its 429 said until when). */
interface Failed {
  error: UpstreamError
  rested: boolean
}

/**
 * One request's way through its alias's targets: skips targets resting after a 429, with an open
 * circuit or at their account's rpm / tpm; retries the same target with backoff on retryable
 * failures (up to its `max_retries`), then fails over to the next; all within one deadline. A
 * failure whose scope is `none` (the request itself is bad) ends the search at once, and so does
 * the caller's disconnect.
 */
class Search<T> {
  private lastError: UpstreamError | undefined
  private attempts = 0
  private readonly skips: Skip[] = []
  /** Targets tried or passed over so far; kept only under a load-following strategy (for `slow`). */
  private readonly seen: Set<Target> | null
  /** Where attempts are measured: only for the strategies that follow the measurements. */
  private readonly load: TargetLoad | undefined
  private readonly deadline: number
  private readonly random: () => number
  private readonly plan: TargetPlan

  constructor(
    private readonly alias: Alias,
    private readonly options: DispatchOptions,
    private readonly call: (target: Target, attempt: AttemptScope) => Promise<T>,
  ) {
    this.deadline = options.now() + options.deadlineMs
    this.random = options.random ?? Math.random
    this.plan = planTargets(alias, options.load, this.random)
    const following = alias.strategy === 'least_latency' || alias.strategy === 'least_busy'
    this.load = following ? options.load : undefined
    this.seen = following ? new Set() : null
  }

  async run(): Promise<Dispatched<T>> {
    for (const target of this.plan.targets) {
      const open = this.admit(target)
      if (!(open === true || (open !== false && (await open)))) continue
      const served = await this.serveFrom(target, target === this.plan.probe)
      if (served) return served
    }
    if (this.lastError) throw this.lastError
    throw everyTargetSkipped(this.alias.name, this.skips)
  }

  /** Whether the target may be asked now, its circuit's permission taken; waits only to count a target with limits. */
  private admit(target: Target): boolean | Promise<boolean> {
    const { circuits, targetLimiter, now } = this.options
    const closed = closedTarget(target, circuits, targetLimiter, now())
    if (closed) return this.skipped(target, closed)
    if (!target.limits || !targetLimiter) return true
    return overLimit(target, circuits, targetLimiter, now()).then((over) => (over ? this.skipped(target, over) : true))
  }

  private skipped(target: Target, skip: Skip): false {
    this.seen?.add(target)
    this.skips.push(skip)
    this.options.onSkip?.(target, skip.reason)
    return false
  }

  /** Under a load-following strategy, targets configured before this one and not yet asked were ranked behind it: `slow`. */
  private passOver(target: Target): void {
    const seen = this.seen
    if (seen === null) return
    seen.add(target)
    for (const other of this.alias.targets) {
      if (other === target) return
      if (seen.has(other)) continue
      seen.add(other)
      this.options.onSkip?.(other, 'slow')
    }
  }

  /** Attempts on one target, retries included; null when the search goes on to the next target. */
  private async serveFrom(target: Target, probe: boolean): Promise<Dispatched<T> | null> {
    const { circuits, now, targetLimiter } = this.options
    const key = targetKey(target)
    const settings = target.upstream
    this.passOver(target)
    for (let retry = 0; ; retry++) {
      const outcome = await this.attempt(target, probe && retry === 0)
      if (!('error' in outcome)) return outcome
      const { error, rested } = outcome
      this.lastError = error
      if (error.retry === 'other' || retry === settings.maxRetries) return null
      // Asked to wait longer than is worth holding the caller: this target is done for now.
      if (error.retryAfterMs !== undefined && error.retryAfterMs > MAX_HONOURED_RETRY_AFTER_MS) return null
      // Resting now: another target serves at once, if there is one.
      if (rested && this.plan.targets.indexOf(target) < this.plan.targets.length - 1) return null
      if (!circuits.tryAcquire(key, settings, now())) return null
      const wait = backoffMs(retry, error, this.random)
      if (now() + wait >= this.deadline) {
        circuits.abandon(key)
        return null
      }
      try {
        await (this.options.sleep ?? abortableSleep)(wait, this.options.clientSignal)
      } catch {
        circuits.abandon(key)
        throw clientClosed()
      }
      if (target.limits && targetLimiter && (await overLimit(target, circuits, targetLimiter, now()))) return null
    }
  }

  /** One attempt, its circuit's permission taken: the answer, or how it failed (errors that end the search are thrown). */
  private async attempt(target: Target, probe: boolean): Promise<Dispatched<T> | Failed> {
    const { options } = this
    const { circuits, now } = options
    const key = targetKey(target)
    const remaining = this.deadline - now()
    if (remaining <= 0) {
      circuits.abandon(key)
      throw upstreamTimeout(target.upstream.name, `the request's ${options.deadlineMs} ms deadline passed`)
    }
    const scope = openAttempt(target, options, Math.min(target.upstream.timeoutMs, remaining))
    this.attempts++
    const span = this.options.trace?.attempt(target, this.attempts)
    if (span) scope.trace = span.headers
    options.onAttempt(target, this.attempts)
    const load = this.load
    const measure = load?.started(target, probe)
    try {
      const value = await this.call(target, scope)
      if (measure) load!.answered(measure)
      span?.answered()
      options.onSuccess?.(target)
      return answered(target, value, scope, options, measure && { load: load!, measure }, span)
    } catch (error) {
      if (measure) load!.ended(measure, false)
      const reason = error instanceof GatewayError ? error : clientClosed()
      span?.failed(reason)
      // The attempt is over: hang up on the upstream if it is still sending (a body past its cap).
      scope.abort(reason)
      scope.end()
      return this.failed(target, error)
    }
  }

  /** What a failed attempt means: the search ends (thrown), or goes on; a 429 that said until when rests the target. */
  private async failed(target: Target, error: unknown): Promise<Failed> {
    const { options } = this
    const { circuits, now } = options
    const key = targetKey(target)
    if (options.clientSignal.aborted) {
      circuits.abandon(key)
      throw clientClosed()
    }
    if (!(error instanceof UpstreamError)) {
      circuits.abandon(key)
      throw error
    }
    options.onFailure?.(target, error)
    if (error.retry === 'none') {
      // The upstream answered, sanely, that the request is bad: the target itself is healthy.
      circuits.success(key)
      throw error
    }
    circuits.failure(key, target.upstream, now())
    const rests = error.code === 'upstream_rate_limited' && error.retryAfterMs !== undefined && options.targetLimiter !== undefined
    if (rests) await options.targetLimiter!.rest(key, error.retryAfterMs!, now())
    return { error, rested: rests }
  }
}

/** Serves a request from an alias's targets (see Search). */
export function dispatch<T>(alias: Alias, options: DispatchOptions, call: (target: Target, attempt: AttemptScope) => Promise<T>): Promise<Dispatched<T>> {
  return new Search(alias, options, call).run()
}

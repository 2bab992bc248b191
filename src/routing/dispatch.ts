import { clientClosed, GatewayError, overloaded } from '../errors'
import { UpstreamError, upstreamTimeout } from '../providers/errors'
import type { AttemptContext } from '../providers/types'
import { traceOf } from '../observe/tracing/registry'
import type { AttemptSpan } from '../observe/tracing/types'
import { type CircuitBreakers, targetKey } from './circuit'
import type { UpstreamConnections } from './connections'
import type { Alias, Target } from './table'

/** One attempt's lifetime: its abort signal (caller disconnect, connect and overall timeouts). */
export interface AttemptScope extends AttemptContext {
  /** Stops the attempt's timers; call once the attempt's response is fully read or has failed. */
  end(): void
  /** Aborts the upstream request. */
  abort(reason: GatewayError): void
  /** From now on the caller's disconnect no longer aborts the attempt (a stream drained for its usage). */
  detachClient(): void
}

/**
 * Starts an attempt on one of the instance's upstream connections, taken here (or refused with the
 * 503 `upstream_connection_limit`) and given back when the attempt ends, exactly once.
 */
function startAttempt(target: Target, connections: UpstreamConnections, clientSignal: AbortSignal, timeoutMs: number, connectTimeoutMs: number): AttemptScope {
  connections.acquire()
  const controller = new AbortController()
  const name = target.upstream.name
  const onClientAbort = () => controller.abort(clientClosed())
  if (clientSignal.aborted) onClientAbort()
  else clientSignal.addEventListener('abort', onClientAbort, { once: true })
  const overall = setTimeout(() => controller.abort(upstreamTimeout(name, `no complete answer within ${timeoutMs} ms`)), timeoutMs)
  let connect: Timer | null =
    connectTimeoutMs < timeoutMs
      ? setTimeout(() => controller.abort(upstreamTimeout(name, `no response within ${connectTimeoutMs} ms`)), connectTimeoutMs)
      : null
  const responded = () => {
    if (connect) clearTimeout(connect)
    connect = null
  }
  let ended = false
  return {
    signal: controller.signal,
    responded,
    end() {
      if (ended) return
      ended = true
      responded()
      clearTimeout(overall)
      clientSignal.removeEventListener('abort', onClientAbort)
      connections.release()
    },
    abort: (reason) => controller.abort(reason),
    detachClient: () => clientSignal.removeEventListener('abort', onClientAbort),
  }
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
function answered<T>(target: Target, value: T, scope: AttemptScope, circuits: CircuitBreakers, now: () => number, span?: AttemptSpan): Dispatched<T> {
  const key = targetKey(target)
  let finished = false
  const finish = (outcome: AttemptOutcome, reason?: GatewayError) => {
    if (finished) return
    finished = true
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

/**
 * Serves a request from an alias's targets: skips targets whose circuit is open, retries the same
 * target with backoff on retryable failures (up to its `max_retries`), then fails over to the next;
 * all within one deadline. A failure whose scope is `none` (the request itself is bad) ends the
 * search at once, and so does the caller's disconnect.
 */
export async function dispatch<T>(alias: Alias, options: DispatchOptions, call: (target: Target, attempt: AttemptScope) => Promise<T>): Promise<Dispatched<T>> {
  const { circuits, now } = options
  const random = options.random ?? Math.random
  const sleep = options.sleep ?? abortableSleep
  const deadline = now() + options.deadlineMs
  let lastError: UpstreamError | undefined
  let attempts = 0
  let skippedMs: number | null = null
  // Each attempt gets a client span when the request is traced; looked up once, not per attempt.
  const trace = traceOf(options.clientSignal)

  for (const target of orderTargets(alias, random)) {
    const key = targetKey(target)
    const settings = target.upstream
    if (!circuits.tryAcquire(key, settings, now())) {
      const wait = circuits.retryInMs(key, settings, now())
      skippedMs = skippedMs === null ? wait : Math.min(skippedMs, wait)
      continue
    }
    for (let retry = 0; retry <= settings.maxRetries; retry++) {
      const remaining = deadline - now()
      if (remaining <= 0) {
        circuits.abandon(key)
        throw upstreamTimeout(target.upstream.name, `the request's ${options.deadlineMs} ms deadline passed`)
      }
      const scope = openAttempt(target, options, Math.min(settings.timeoutMs, remaining))
      attempts++
      const span = trace?.attempt(target, attempts)
      if (span) scope.trace = span.headers
      options.onAttempt(target, attempts)
      try {
        const value = await call(target, scope)
        span?.answered()
        options.onSuccess?.(target)
        return answered(target, value, scope, circuits, now, span)
      } catch (error) {
        const reason = error instanceof GatewayError ? error : clientClosed()
        span?.failed(reason)
        // The attempt is over: hang up on the upstream if it is still sending (a body past its cap).
        scope.abort(reason)
        scope.end()
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
        circuits.failure(key, settings, now())
        lastError = error
        if (error.retry === 'other' || retry === settings.maxRetries) break
        // Asked to wait longer than is worth holding the caller: this target is done for now.
        if (error.retryAfterMs !== undefined && error.retryAfterMs > MAX_HONOURED_RETRY_AFTER_MS) break
        if (!circuits.tryAcquire(key, settings, now())) break
        const wait = backoffMs(retry, error, random)
        if (now() + wait >= deadline) break
        try {
          await sleep(wait, options.clientSignal)
        } catch {
          circuits.abandon(key)
          throw clientClosed()
        }
      }
    }
  }

  if (lastError) throw lastError
  const retryAfter = Math.max(1, Math.ceil((skippedMs ?? 1000) / 1000))
  throw overloaded(`Every target of "${alias.name}" is unavailable (circuit open); retry in ${retryAfter} s`, {
    code: 'circuit_open',
    retryAfterSeconds: retryAfter,
  })
}

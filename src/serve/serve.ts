import type { Caller } from '../auth/authenticate'
import { GatewayError, internalError, permissionDenied, unsupported } from '../errors'
import { statusOf } from '../http/errors'
import { type HeaderNames, setRateLimitHeaders } from '../http/headers'
import type { Limiter } from '../limits/limiter'
import type { Logger } from '../log'
import type { GatewayMetrics } from '../observe/metrics'
import type { RequestObserver } from '../observe/observer'
import type { RequestRecord } from '../observe/request-record'
import { traceOf } from '../observe/tracing/registry'
import { noteAnswer } from '../request-log/answer'
import type { RequestLog } from '../request-log/log'
import { StreamAnswer } from '../request-log/stream-answer'
import type { UpstreamError } from '../providers/errors'
import type { CircuitBreakers } from '../routing/circuit'
import type { UpstreamConnections } from '../routing/connections'
import { dispatch, type DispatchOptions } from '../routing/dispatch'
import { type Alias, resolveAlias, type RoutingTable, type Target } from '../routing/table'
import type { TargetRouting } from '../routing/target-routing'
import { estimateNanos } from '../spend/estimate'
import { costNanos, formatUsd } from '../spend/price'
import { NO_UPSTREAM, type UsageEntry } from '../usage/entry'
import type { UsageGate } from '../usage/gate'
import type { Usage } from '../wire/pivot/types'
import { type CacheDeps, type CacheTurn, keepAnswer, lookUp, serveHit, streamKeeper } from './cache'
import type { Exchange, ServeCall } from './exchange'
import { type StreamEnd, type StreamOptions, streamResponse } from './stream-response'

/** What serving a request needs, and nothing more: built once with the gateway. */
export interface ServeDeps {
  /** The routing table in force (a reload swaps it; a request keeps the one it started with). */
  routing(): RoutingTable
  /** Admits requests, and settles them: frees their slots, charges them and records their usage. */
  limiter: Limiter
  circuits: CircuitBreakers
  /** The instance's open upstream requests, bounded by `[http] max_upstream_connections`. */
  connections: UpstreamConnections
  now: () => number
  headers: HeaderNames
  metrics: GatewayMetrics
  log: Logger
  observer: RequestObserver
  /** Shut while usage cannot be made durable: requests are then refused before they reach an upstream. */
  usage: UsageGate
  /** Records each request's end, durably, in the same turn as its usage. */
  requestLog: RequestLog
  /** The exact response cache (serve/cache.ts); null: none on this instance. */
  cache: CacheDeps | null
  /** This instance's measurements of the targets, and the providers' own limits and rests. */
  targets: TargetRouting
}

/**
 * The alias with only the targets that can serve this request as asked (a target that cannot is
 * skipped like an unconfigured one). With none left, the first target's reason is the 400.
 * Exchanges whose targets serve anything cost nothing here.
 */
function servableTargets(alias: Alias, exchange: Exchange): Alias {
  let servable: Target[] | null = null
  let first = null
  for (const [i, target] of alias.targets.entries()) {
    const problem = exchange.cannotServe(target)
    if (problem === null) {
      servable?.push(target)
      continue
    }
    first ??= problem
    servable ??= alias.targets.slice(0, i)
  }
  if (servable === null) return alias
  if (servable.length === 0) throw unsupported(first!)
  return { ...alias, targets: servable }
}

/** Refuses an alias the caller's tier may not use (its `models` globs). */
export function authorizeAlias(caller: Caller, alias: Alias): void {
  if (!caller.tier.allows(alias.name))
    throw permissionDenied(`Tier "${caller.tier.name}" may not use the model "${alias.name}"`, { code: 'model_not_allowed', param: 'model' })
}

const hasBudget = (caller: Caller): boolean => caller.limits.dailyBudgetNanos !== null || caller.limits.monthlyBudgetNanos !== null

/**
 * A key with a budget may spend only where spend is known: unpriced targets are skipped for it, and
 * with none left it is refused. Keys without a budget keep every target.
 */
function pricedTargets(caller: Caller, alias: Alias): Alias {
  if (!hasBudget(caller)) return alias
  if (alias.targets.every((t) => t.price !== null)) return alias
  const targets = alias.targets.filter((t) => t.price !== null)
  if (targets.length === 0) {
    throw permissionDenied(`The model "${alias.name}" has no price, and this key has a budget: it may use priced models only`, {
      code: 'model_not_priced',
      param: 'model',
    })
  }
  return { ...alias, targets }
}

/** What the key's budget holds back for this request until it settles (0 for keys without a budget). */
function reservationNanos(caller: Caller, alias: Alias, exchange: Exchange): number {
  if (!hasBudget(caller)) return 0
  return estimateNanos(
    exchange.tokenBound(),
    alias.targets.map((t) => t.price!),
  )
}

/** The exact cost of what a target answered, in nano-dollars; 0 when it has no price or reported no usage. */
function costOf(target: Target | undefined, usage: Usage | null): number {
  if (!target?.price || !usage) return 0
  const written = usage.cache_creation_input_tokens
  return costNanos(
    {
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
      cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
      cacheWriteTokens: typeof written === 'number' ? written : 0,
    },
    target.price,
  )
}

/** A stream's answer is put together for the request log up to this many characters a part (the log cuts it shorter). */
const MAX_ASSEMBLED_CHARS = 16 * 1024 * 1024

/** What serve() has learnt about its attempts: the last target tried, and when the first one started. */
interface Attempts {
  last: Target | undefined
  upstreamStart: number | undefined
}

/** Marks the request's latest attempt ended. */
function endAttempt(record: RequestRecord, outcome: string, status?: number): void {
  const last = record.attemptLog?.at(-1)
  if (!last || last.endMs !== undefined) return
  last.endMs = performance.now() - record.start
  last.outcome = outcome
  if (status !== undefined) last.status = status
}

/** Dispatch's options for one request: its headers, log fields and metrics follow each attempt. */
function dispatchOptions(deps: ServeDeps, call: ServeCall, alias: Alias, deadlineMs: number, attempts: Attempts): DispatchOptions {
  const { metrics, headers } = deps
  const { record } = call
  return {
    clientSignal: call.clientSignal,
    circuits: deps.circuits,
    connections: deps.connections,
    deadlineMs,
    now: deps.now,
    onAttempt: (target, attempt) => {
      attempts.upstreamStart ??= performance.now()
      if (attempts.last === target) metrics.retries.inc(target.upstream.name)
      else if (attempts.last) metrics.fallbacks.inc(alias.name)
      attempts.last = target
      record.upstream = target.upstream.name
      record.upstreamModel = target.model
      record.attempts = attempt
      ;(record.attemptLog ??= []).push({ upstream: target.upstream.name, model: target.model, startMs: performance.now() - record.start })
      call.headers[headers.model] = target.model
      call.headers[headers.upstream] = target.upstream.name
      call.headers[headers.attempts] = String(attempt)
    },
    onFailure: (target, error) => {
      endAttempt(record, error.code ?? error.type, statusOf(error))
      metrics.attempts.inc(target.upstream.name, error.code ?? 'error')
      logUpstreamFailure(deps.log, target, error)
    },
    onSuccess: (target) => {
      endAttempt(record, 'ok')
      metrics.attempts.inc(target.upstream.name, 'success')
    },
    load: deps.targets.load,
    targetLimiter: deps.targets.limiter,
    trace: traceOf(call.clientSignal),
    onSkip: (target, skipped) => {
      const at = performance.now() - record.start
      ;(record.attemptLog ??= []).push({ upstream: target.upstream.name, model: target.model, startMs: at, endMs: at, outcome: 'skipped', skipped })
    },
  }
}

/**
 * Serves one request, for any inbound API: resolve the alias, check the tier may use it, admit it
 * through the limiter, dispatch it to a target (retries, failover, circuits), count it, respond.
 * Every admitted request is settled exactly once, by construction: the first call of `settle` counts
 * it and every later call gets the same promise. An answer whose usage cannot be made durable is
 * not given out: the caller gets 503 `usage_unavailable` instead, and is not billed.
 */
export async function serve(deps: ServeDeps, call: ServeCall, exchange: Exchange): Promise<Response | string> {
  try {
    return await serveAdmitted(deps, call, exchange)
  } catch (error) {
    // Recorded in this turn's batch before the error answer leaves (see request-log/log.ts).
    const failure = error instanceof GatewayError ? error : internalError('Internal server error')
    await deps.requestLog.settle(call.record, statusOf(failure), failure)
    throw error
  }
}

async function serveAdmitted(deps: ServeDeps, call: ServeCall, exchange: Exchange): Promise<Response | string> {
  const { caller, record } = call
  const { metrics } = deps
  deps.usage.check()
  // One routing table for the whole request, even if a reload swaps it meanwhile.
  const routing = deps.routing()
  const resolved = resolveAlias(routing, exchange.model)
  exchange.checkAlias?.(resolved)
  const alias = pricedTargets(caller, servableTargets(resolved, exchange))
  record.alias = alias.name
  authorizeAlias(caller, alias)
  const cache = await lookUp(deps, call, alias.name, exchange)
  if (cache?.hit) return serveHit(deps, call, alias.name, exchange, cache.hit)
  const admission = await deps.limiter.admit(caller.key.id, caller.limits, deps.now(), reservationNanos(caller, alias, exchange))
  setRateLimitHeaders(call.headers, admission.state)
  if (!admission.ok) {
    metrics.refusals.inc(admission.reason)
    throw admission.error
  }
  metrics.inFlight.value++

  const attempts: Attempts = { last: undefined, upstreamStart: undefined }
  let settled: Promise<void> | null = null
  const settle = (target: Target | undefined, usage: Usage | null, error: boolean, estimated = false): Promise<void> => {
    settled ??= (() => {
      metrics.inFlight.value--
      if (attempts.upstreamStart !== undefined) record.upstreamMs = performance.now() - attempts.upstreamStart
      if (estimated) record.usageEstimated = true
      if (target && usage) deps.targets.charge(target, usage.prompt_tokens + usage.completion_tokens, deps.now())
      return admission.settle(usageEntry(deps, call, alias, target, usage, error)).catch((failure: unknown) => {
        throw deps.usage.failed(failure)
      })
    })()
    return settled
  }
  const options = dispatchOptions(deps, call, alias, routing.deadlineMs, attempts)

  try {
    const stream = exchange.stream
    if (stream) {
      const opened = await dispatch(alias, options, (target, attempt) => stream.open(target, attempt))
      nameDropped(call, deps.headers, exchange.dropped?.(opened.target))
      record.deferred = true
      record.ttfbMs = Math.round(performance.now() - record.start)
      const count = ({ usage, failure, estimated }: StreamEnd) => settle(opened.target, usage, failure !== null, estimated)
      const streamOptions = streamOptionsFor(deps, record, routing.drainMs, count, cache)
      return streamResponse(streamOptions, call, stream, opened)
    }
    const served = await dispatch(alias, options, (target, attempt) => exchange.complete(target, attempt))
    served.finish('ok')
    nameDropped(call, deps.headers, exchange.dropped?.(served.target))
    noteAnswer(record, served.value.body)
    record.responseBody = served.value.body
    // Counted and recorded before the response leaves: a response the client received is always in usage and the request log.
    await Promise.all([settle(served.target, served.value.usage, false), deps.requestLog.settle(record, 200), served.value.kept])
    if (cache) keepAnswer(deps, cache, record.api!, served.value.body, served.value.usage, record.costNanos ?? 0)
    // A string, not a Response: the framework builds the one Response with every header at once.
    call.headers['content-type'] = 'application/json'
    call.headers[deps.headers.cost] = formatUsd(record.costNanos ?? 0)
    return served.value.body
  } catch (error) {
    // Settled already (its usage could not be recorded): that is the answer, not what failed before.
    await settle(attempts.last, null, true)
    throw error
  }
}

/** How a stream is relayed for this request: its end is counted (`count`), recorded in the request log and observed. */
function streamOptionsFor(
  deps: ServeDeps,
  record: RequestRecord,
  drainMs: number,
  count: (end: StreamEnd) => Promise<void>,
  cache: CacheTurn | null,
): StreamOptions {
  const answer = deps.requestLog.keepsBodies(record.tier) ? new StreamAnswer(record.api, MAX_ASSEMBLED_CHARS) : null
  const kept = cache && streamKeeper(deps, cache, record.api!)
  return {
    headers: deps.headers,
    drainMs,
    onText: (text) => {
      noteAnswer(record, text)
      answer?.push(text)
      kept?.push(text)
    },
    settle: (end) => {
      const committed = count(end)
      // Only a stream that ended as it should is kept: never a broken or cut one.
      if (kept && end.failure === null && !end.estimated) void committed.then(() => kept.keep(end.usage, record.costNanos ?? 0))
      if (answer) record.responseBody = answer.json()
      const failure = end.failure ?? undefined
      const logged = deps.requestLog.settle(record, 200, failure)
      // The log line says how the stream ended: its usage could not be recorded, if so.
      committed.then(
        () => deps.observer.finish(record, 200, failure),
        (error: unknown) => deps.observer.finish(record, 200, error instanceof GatewayError ? error : undefined),
      )
      return Promise.all([committed, logged]).then(() => {})
    },
    unrecorded: (error) => (error instanceof GatewayError ? error : deps.usage.failed(error)),
    onLeave: () => deps.log.debug({ request_id: record.id, drain_ms: drainMs }, 'the caller left mid-stream: reading on for the usage'),
  }
}

/** Names in x-svc-dropped (and the request's record) what the target that served did not get (hints it cannot use): never a silent drop. */
function nameDropped(call: ServeCall, names: HeaderNames, dropped: readonly string[] | undefined): void {
  if (!dropped || dropped.length === 0) return
  call.headers[names.dropped] = dropped.join(', ')
  call.record.dropped = [...dropped]
}

/** The usage entry of a settled request; its counters also go to the request's log record. */
function usageEntry(deps: ServeDeps, call: ServeCall, alias: Alias, target: Target | undefined, usage: Usage | null, error: boolean): UsageEntry {
  const { record } = call
  const promptTokens = (record.promptTokens = usage?.prompt_tokens ?? 0)
  const completionTokens = (record.completionTokens = usage?.completion_tokens ?? 0)
  const cost = (record.costNanos = costOf(target, usage))
  return {
    keyId: call.caller.key.id,
    alias: alias.name,
    upstream: target?.upstream.name ?? NO_UPSTREAM,
    error,
    promptTokens,
    completionTokens,
    costNanos: cost,
    latencyMs: performance.now() - record.start,
    at: deps.now(),
  }
}

function logUpstreamFailure(log: Logger, target: Target, error: UpstreamError): void {
  const fields = { upstream: target.upstream.name, model: target.model, code: error.code, type: error.type }
  if (error.code === 'upstream_auth_failed') {
    // Our own credentials are wrong: every request to this upstream will fail until an operator acts.
    log.error(
      { ...fields, api_key_env: target.upstream.apiKeyEnv },
      `upstream "${target.upstream.name}" rejected the gateway's API key: check the environment variable ${target.upstream.apiKeyEnv ?? '(none configured)'}`,
    )
  } else {
    log.warn(fields, `upstream attempt failed: ${error.message}`)
  }
}

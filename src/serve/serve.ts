import type { Caller } from '../auth/authenticate'
import { clientClosed, GatewayError, permissionDenied, unsupported } from '../errors'
import { type HeaderNames, setRateLimitHeaders, takeHeaders } from '../http/headers'
import type { Limiter } from '../limits/limiter'
import type { Logger } from '../log'
import type { GatewayMetrics } from '../observe/metrics'
import type { RequestObserver } from '../observe/observer'
import { elapsedMs, type RequestRecord } from '../observe/request-record'
import { connectionLost, type UpstreamError } from '../providers/errors'
import type { CircuitBreakers } from '../routing/circuit'
import type { UpstreamConnections } from '../routing/connections'
import { type Dispatched, dispatch, type DispatchOptions } from '../routing/dispatch'
import { type Alias, resolveAlias, type RoutingTable, type Target } from '../routing/table'
import { estimateNanos } from '../spend/estimate'
import { costNanos, formatUsd } from '../spend/price'
import { NO_UPSTREAM } from '../usage/entry'
import type { Usage } from '../wire/openai/types'
import type { EventStream, Exchange, StreamSide } from './exchange'

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
}

/** One request to serve: who asked, and where its answer goes. */
export interface ServeCall {
  caller: Caller
  /** Fires when the caller disconnects. */
  clientSignal: AbortSignal
  /** Response headers under construction (Elysia's `set.headers`); errors carry them too. */
  headers: Record<string, string | number>
  /** The request's record for its log line and metrics. */
  record: RequestRecord
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

/**
 * Serves one request, for any inbound API: resolve the alias, check the tier may use it, admit it
 * through the limiter, dispatch it to a target (retries, failover, circuits), count it, respond.
 * Every admitted request is counted exactly once, before its response ends.
 */
export async function serve(deps: ServeDeps, call: ServeCall, exchange: Exchange): Promise<Response | string> {
  const { caller, record } = call
  const { metrics } = deps
  // One routing table for the whole request, even if a reload swaps it meanwhile.
  const routing = deps.routing()
  const alias = pricedTargets(caller, servableTargets(resolveAlias(routing, exchange.model), exchange))
  record.alias = alias.name
  authorizeAlias(caller, alias)
  const admission = await deps.limiter.admit(caller.key.id, caller.limits, deps.now(), reservationNanos(caller, alias, exchange))
  setRateLimitHeaders(call.headers, admission.state)
  if (!admission.ok) {
    metrics.refusals.inc(admission.reason)
    throw admission.error
  }
  metrics.inFlight.value++

  let lastTarget: Target | undefined
  let upstreamStart: number | undefined
  // Every admitted request ends here exactly once: counted in usage, its slot freed, its tokens and
  // cost charged. The promise resolves once the usage is durable: await it before the response ends.
  const settle = async (target: Target | undefined, usage: Usage | null, error: boolean): Promise<void> => {
    metrics.inFlight.value--
    if (upstreamStart !== undefined) record.upstreamMs = performance.now() - upstreamStart
    const promptTokens = (record.promptTokens = usage?.prompt_tokens ?? 0)
    const completionTokens = (record.completionTokens = usage?.completion_tokens ?? 0)
    const cost = (record.costNanos = costOf(target, usage))
    return admission.settle({
      keyId: caller.key.id,
      alias: alias.name,
      upstream: target?.upstream.name ?? NO_UPSTREAM,
      error,
      promptTokens,
      completionTokens,
      costNanos: cost,
      latencyMs: performance.now() - record.start,
      at: deps.now(),
    })
  }
  const options: DispatchOptions = {
    clientSignal: call.clientSignal,
    circuits: deps.circuits,
    connections: deps.connections,
    deadlineMs: routing.deadlineMs,
    now: deps.now,
    onAttempt: (target, attempt) => {
      upstreamStart ??= performance.now()
      if (lastTarget === target) metrics.retries.inc(target.upstream.name)
      else if (lastTarget) metrics.fallbacks.inc(alias.name)
      lastTarget = target
      record.upstream = target.upstream.name
      record.upstreamModel = target.model
      record.attempts = attempt
      call.headers[deps.headers.model] = target.model
      call.headers[deps.headers.upstream] = target.upstream.name
      call.headers[deps.headers.attempts] = String(attempt)
    },
    onFailure: (target, error) => {
      metrics.attempts.inc(target.upstream.name, error.code ?? 'error')
      logUpstreamFailure(deps.log, target, error)
    },
    onSuccess: (target) => metrics.attempts.inc(target.upstream.name, 'success'),
  }

  try {
    const stream = exchange.stream
    if (stream) {
      const opened = await dispatch(alias, options, (target, attempt) => stream.open(target, attempt))
      record.deferred = true
      record.ttfbMs = Math.round(performance.now() - record.start)
      return streamResponse(deps.headers, call, stream, opened, (usage, failure) => {
        const committed = settle(opened.target, usage, failure !== null)
        deps.observer.finish(record, 200, failure ?? undefined)
        return committed
      })
    }
    const served = await dispatch(alias, options, (target, attempt) => exchange.complete(target, attempt))
    served.finish('ok')
    // Counted before the response leaves: a response the client received is always in usage.
    await settle(served.target, served.value.usage, false)
    // A string, not a Response: the framework builds the one Response with every header at once.
    call.headers['content-type'] = 'application/json'
    call.headers[deps.headers.cost] = formatUsd(record.costNanos ?? 0)
    return served.value.body
  } catch (error) {
    await settle(lastTarget, null, true)
    throw error
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

/**
 * Relays an upstream stream to the caller as it arrives. A failure after the first byte cannot fail
 * over any more: the caller gets the exchange's error event and no normal end.
 */
function streamResponse(
  headerNames: HeaderNames,
  call: ServeCall,
  stream: StreamSide,
  opened: Dispatched<EventStream>,
  onEnd: (usage: Usage | null, failure: GatewayError | null) => Promise<void>,
): Response {
  const events = opened.value
  let finished = false
  /** Resolves once the stream's usage is durable. */
  const finish = async (failure: GatewayError | null) => {
    if (finished) return
    finished = true
    opened.finish(failure === null ? 'ok' : failure.code === 'client_closed' ? 'abandoned' : 'failed', failure ?? undefined)
    await onEnd(events.usage(), failure)
  }

  // Text chunks: Bun encodes them as it writes, one copy fewer than a TextEncoder per batch.
  const body = new ReadableStream<string>({
    async pull(controller) {
      for (;;) {
        let text: string | null
        try {
          text = await events.next()
        } catch (error) {
          if (finished) return
          // A caller's disconnect aborts the attempt, so a pending read fails with client_closed.
          const failure = error instanceof GatewayError ? error : connectionLost(opened.target.upstream.name, 'the stream failed')
          await finish(failure)
          if (failure.code === 'client_closed') return
          controller.enqueue(stream.failureEvent(failure))
          controller.close()
          return
        }
        if (text === null) {
          // Counted before the end goes out: a client that saw the end of the stream is always billed.
          await finish(null)
          const end = events.end()
          if (end !== '') controller.enqueue(end)
          controller.close()
          return
        }
        if (text === '') continue
        controller.enqueue(text)
        return
      }
    },
    async cancel() {
      // The caller disconnected: stop the upstream and count what happened.
      await Promise.all([finish(clientClosed()), events.cancel()])
    },
  })

  const headers = call.headers
  headers[headerNames.latency] = String(elapsedMs(call.record))
  headers['content-type'] = 'text/event-stream; charset=utf-8'
  headers['cache-control'] = 'no-cache'
  headers.connection = 'keep-alive'
  return new Response(body, { headers: takeHeaders(headers) })
}

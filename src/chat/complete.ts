import type { Caller } from '../auth/authenticate'
import { GatewayError, type Unsupported, unsupported } from '../errors'
import type { Gateway } from '../gateway'
import { takeHeaders } from '../http/headers'
import { elapsedMs, type RequestRecord } from '../http/request-record'
import type { LimitState } from '../limits/limiter'
import type { UpstreamError } from '../providers/errors'
import { clientClosed, type Dispatched, dispatch, type DispatchOptions } from '../routing/dispatch'
import { type Alias, resolveAlias, type Target } from '../routing/table'
import { ChunkRelay, completionJson } from './relay'
import type { ChatRequest, StreamChunk, Usage } from '../wire/openai/types'

export interface ChatCall {
  gateway: Gateway
  caller: Caller
  request: ChatRequest
  /** Fires when the caller disconnects. */
  clientSignal: AbortSignal
  /** Response headers under construction (Elysia's `set.headers`); errors carry them too. */
  headers: Record<string, string | number>
  /** The request's record for its log line and metrics. */
  record: RequestRecord
}

export function setRateLimitHeaders(headers: ChatCall['headers'], state: LimitState): void {
  headers['x-ratelimit-limit'] = String(state.limit)
  headers['x-ratelimit-remaining'] = String(state.remaining)
  headers['x-ratelimit-reset'] = String(state.resetSeconds)
  headers['x-ratelimit-limit-tokens'] = String(state.tokenLimit)
  headers['x-ratelimit-remaining-tokens'] = String(state.tokensRemaining)
}

/** Usage rows of requests that never reached an upstream (every circuit open) use this upstream name. */
export const NO_UPSTREAM = '-'

const DONE = 'data: [DONE]\n\n'

/** An upstream stream whose first chunks have arrived: until then, failover was still possible. */
interface OpenedStream {
  iterator: AsyncIterator<StreamChunk[]>
  first: IteratorResult<StreamChunk[]>
}

/** Resolves the alias, applies the caller's tier and limits, and serves the completion from an upstream. */
export async function completeChat(call: ChatCall): Promise<Response | string> {
  const { gateway, caller, request, record } = call
  const { metrics } = gateway
  // One routing table for the whole request, even if a reload swaps it meanwhile.
  const routing = gateway.routing
  const alias = servableTargets(resolveAlias(routing, request.model), request)
  record.alias = alias.name
  record.messages = request.messages
  if (!caller.tier.allows(alias.name)) {
    throw new GatewayError(403, 'permission_error', `Tier "${caller.tier.name}" may not use the model "${alias.name}"`, 'model_not_allowed', 'model')
  }
  const admission = gateway.limiter.admit(caller.key.id, caller.limits, gateway.now())
  setRateLimitHeaders(call.headers, admission.state)
  if (!admission.ok) {
    metrics.refusals.inc(admission.reason)
    throw admission.error
  }
  metrics.inFlight.value++

  let lastTarget: Target | undefined
  let upstreamStart: number | undefined
  // Every admitted request ends here exactly once: counted in usage, its slot freed, its tokens
  // charged. The promise resolves once the usage is committed: await it before the response ends.
  const settle = (target: Target | undefined, usage: Usage | null, error: boolean): Promise<void> => {
    metrics.inFlight.value--
    if (upstreamStart !== undefined) record.upstreamMs = performance.now() - upstreamStart
    const promptTokens = (record.promptTokens = usage?.prompt_tokens ?? 0)
    const completionTokens = (record.completionTokens = usage?.completion_tokens ?? 0)
    const at = gateway.now()
    admission.release(promptTokens + completionTokens, at)
    return gateway.usage.record({
      keyId: caller.key.id,
      alias: alias.name,
      upstream: target?.upstream.name ?? NO_UPSTREAM,
      error,
      promptTokens,
      completionTokens,
      latencyMs: performance.now() - record.start,
      at,
    })
  }
  const options: DispatchOptions = {
    clientSignal: call.clientSignal,
    circuits: gateway.circuits,
    deadlineMs: routing.deadlineMs,
    now: gateway.now,
    onAttempt: (target, attempt) => {
      upstreamStart ??= performance.now()
      if (lastTarget === target) metrics.retries.inc(target.upstream.name)
      else if (lastTarget) metrics.fallbacks.inc(alias.name)
      lastTarget = target
      record.upstream = target.upstream.name
      record.upstreamModel = target.model
      record.attempts = attempt
      call.headers[gateway.headers.model] = target.model
      call.headers[gateway.headers.upstream] = target.upstream.name
      call.headers[gateway.headers.attempts] = String(attempt)
    },
    onFailure: (target, error) => {
      metrics.attempts.inc(target.upstream.name, error.code ?? 'error')
      logUpstreamFailure(gateway, target, error)
    },
    onSuccess: (target) => metrics.attempts.inc(target.upstream.name, 'success'),
  }
  const upstreamRequest = (target: Target): ChatRequest => ({ ...request, model: target.model })

  try {
    if (request.stream === true) {
      const opened = await dispatch(alias, options, async (target, attempt): Promise<OpenedStream> => {
        const iterator = await target.provider.stream(upstreamRequest(target), attempt, record.body)
        return { iterator, first: await iterator.next() }
      })
      record.deferred = true
      record.ttfbMs = Math.round(performance.now() - record.start)
      return streamResponse(call, alias, opened, (usage, failure) => {
        const committed = settle(opened.target, usage, failure !== null)
        gateway.observer.finish(record, 200, failure ?? undefined)
        return committed
      })
    }
    const served = await dispatch(alias, options, (target, attempt) => target.provider.complete(upstreamRequest(target), attempt, record.body))
    served.scope.end()
    served.settle(true)
    const { completion, text } = served.value
    // Counted before the response leaves: a response the client received is always in usage.
    await settle(served.target, completion.usage ?? null, false)
    // A string, not a Response: the framework builds the one Response with every header at once.
    call.headers['content-type'] = 'application/json'
    return completionJson(completion, text, alias.name)
  } catch (error) {
    await settle(lastTarget, null, true)
    throw error
  }
}

/**
 * The alias with only the targets that can serve this request as asked (DESIGN: a target that cannot
 * is skipped like an unconfigured one). With none left, the first target's reason is the 400.
 * Providers that serve anything (OpenAI-compatible, the mock) cost nothing here.
 */
function servableTargets(alias: Alias, request: ChatRequest): Alias {
  let servable: Target[] | null = null
  let first: Unsupported | null = null
  for (const [i, target] of alias.targets.entries()) {
    const problem = target.provider.cannotServe?.(request) ?? null
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

function logUpstreamFailure(gateway: Gateway, target: Target, error: UpstreamError): void {
  const fields = { upstream: target.upstream.name, model: target.model, code: error.code, status: error.status }
  if (error.code === 'upstream_auth_failed') {
    // Our own credentials are wrong: every request to this upstream will fail until an operator acts.
    gateway.log.error(
      { ...fields, api_key_env: target.upstream.apiKeyEnv },
      `upstream "${target.upstream.name}" rejected the gateway's API key: check the environment variable ${target.upstream.apiKeyEnv ?? '(none configured)'}`,
    )
  } else {
    gateway.log.warn(fields, `upstream attempt failed: ${error.message}`)
  }
}

/**
 * Relays upstream chunks as SSE events as they arrive, with `model` set to the alias. A failure
 * after the first byte cannot fail over any more: the caller gets an error event and no [DONE].
 */
function streamResponse(
  call: ChatCall,
  alias: Alias,
  opened: Dispatched<OpenedStream>,
  onEnd: (usage: Usage | null, failure: GatewayError | null) => Promise<void>,
): Response {
  const { iterator } = opened.value
  let pending: IteratorResult<StreamChunk[]> | null = opened.value.first
  const relay = new ChunkRelay(alias.name, call.request.stream_options?.include_usage === true)
  let finished = false
  /** Resolves once the stream's usage is committed. */
  const finish = async (failure: GatewayError | null) => {
    if (finished) return
    finished = true
    // A broken or abandoned stream: hang up on the upstream.
    if (failure) opened.scope.abort(failure)
    opened.scope.end()
    opened.settle(failure === null || failure.code === 'client_closed')
    await onEnd(relay.usage, failure)
  }

  // Text chunks: Bun encodes them as it writes, one copy fewer than a TextEncoder per batch.
  const body = new ReadableStream<string>({
    async pull(controller) {
      for (;;) {
        let next: IteratorResult<StreamChunk[]>
        let text: string
        try {
          next = pending ?? (await iterator.next())
          pending = null
          text = next.done ? '' : relay.wire(next.value)
        } catch (error) {
          if (finished) return
          // A caller's disconnect aborts the attempt, so a pending read fails with client_closed.
          const failure = error instanceof GatewayError ? error : new GatewayError(502, 'upstream_error', 'Upstream stream failed')
          await finish(failure)
          if (failure.code === 'client_closed') return
          controller.enqueue(`data: ${JSON.stringify(failure.toBody())}\n\n`)
          controller.close()
          return
        }
        if (next.done) {
          // Counted before [DONE] goes out: a client that saw the end of the stream is always billed.
          await finish(null)
          controller.enqueue(DONE)
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
      const failure = clientClosed()
      opened.scope.abort(failure)
      await Promise.all([finish(failure), iterator.return?.()])
    },
  })

  const headers = call.headers
  headers[call.gateway.headers.latency] = String(elapsedMs(call.record))
  headers['content-type'] = 'text/event-stream; charset=utf-8'
  headers['cache-control'] = 'no-cache'
  headers.connection = 'keep-alive'
  return new Response(body, { headers: takeHeaders(headers) })
}

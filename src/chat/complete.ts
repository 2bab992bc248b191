import type { Caller } from '../auth/authenticate'
import { GatewayError } from '../errors'
import type { Gateway } from '../gateway'
import type { RateLimitState } from '../limits/limiter'
import { clientClosed, type Dispatched, dispatch } from '../routing/dispatch'
import { type Alias, resolveAlias, type Target } from '../routing/table'
import type { ChatCompletionChunk, ChatRequest, Usage } from './types'

export interface ChatCall {
  gateway: Gateway
  caller: Caller
  request: ChatRequest
  /** Fires when the caller disconnects. */
  clientSignal: AbortSignal
  /** Response headers under construction (Elysia's `set.headers`); errors carry them too. */
  headers: Record<string, string | number>
  /** performance.now() when the request arrived. */
  startedAt: number
}

export function setRateLimitHeaders(headers: ChatCall['headers'], state: RateLimitState): void {
  headers['x-ratelimit-limit'] = String(state.limit)
  headers['x-ratelimit-remaining'] = String(state.remaining)
  headers['x-ratelimit-reset'] = String(state.resetSeconds)
}

const encoder = new TextEncoder()
const DONE = encoder.encode('data: [DONE]\n\n')

/** Resolves the alias, applies the caller's tier and limits, and serves the completion from an upstream. */
export async function completeChat(call: ChatCall): Promise<Response> {
  const { gateway, caller, request } = call
  const routing = gateway.routing
  const alias = resolveAlias(routing, request.model)
  if (!caller.tier.allows(alias.name)) {
    throw new GatewayError(403, 'permission_error', `Tier "${caller.tier.name}" may not use the model "${alias.name}"`, 'model_not_allowed', 'model')
  }
  const admission = gateway.limiter.admit(caller.key.id, caller.limits, gateway.now())
  setRateLimitHeaders(call.headers, admission.state)
  if (!admission.ok) throw admission.error

  let lastTarget: Target | undefined
  const record = (target: Target | undefined, usage: Usage | null, error: boolean) => {
    if (!target) return
    gateway.usage.record({
      keyId: caller.key.id,
      alias: alias.name,
      upstream: target.upstream.name,
      error,
      promptTokens: usage?.prompt_tokens ?? 0,
      completionTokens: usage?.completion_tokens ?? 0,
      latencyMs: performance.now() - call.startedAt,
      at: gateway.now(),
    })
  }
  const options = {
    clientSignal: call.clientSignal,
    onAttempt: (target: Target, attempt: number) => {
      lastTarget = target
      call.headers[gateway.headers.model] = target.model
      call.headers[gateway.headers.upstream] = target.upstream.name
      call.headers[gateway.headers.attempts] = String(attempt)
    },
  }
  const upstreamRequest = (target: Target): ChatRequest => ({ ...request, model: target.model })

  try {
    if (request.stream === true) {
      const dispatched = await dispatch(alias, options, (target, signal) => target.provider.stream(upstreamRequest(target), signal))
      return streamResponse(call, alias, dispatched, {
        finish: (usage, error) => {
          record(dispatched.target, usage, error)
          admission.release()
        },
      })
    }
    const { target, value: completion, scope } = await dispatch(alias, options, (target, signal) => target.provider.complete(upstreamRequest(target), signal))
    scope.end()
    completion.model = alias.name
    completion.usage ??= { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
    // Counted before the response leaves: a response the client received is always in usage.
    record(target, completion.usage, false)
    admission.release()
    return new Response(JSON.stringify(completion), { headers: { 'content-type': 'application/json' } })
  } catch (error) {
    record(lastTarget, null, true)
    admission.release()
    throw error
  }
}

interface StreamHooks {
  /** Called exactly once: with the usage seen, and whether the stream failed or was abandoned. */
  finish(usage: Usage | null, error: boolean): void
}

/**
 * Relays upstream chunks as SSE events as they arrive, with `model` set to the alias. A failure
 * after the first byte cannot fail over any more: the caller gets an error event and no [DONE].
 */
function streamResponse(call: ChatCall, alias: Alias, dispatched: Dispatched<AsyncIterator<ChatCompletionChunk>>, hooks: StreamHooks): Response {
  const iterator = dispatched.value
  const includeUsage = call.request.stream_options?.include_usage === true
  let usage: Usage | null = null
  let finished = false
  const finish = (error: boolean) => {
    if (finished) return
    finished = true
    dispatched.scope.end()
    hooks.finish(usage, error)
  }

  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        let next: IteratorResult<ChatCompletionChunk>
        try {
          next = await iterator.next()
        } catch (error) {
          finish(true)
          const failure = error instanceof GatewayError ? error : new GatewayError(502, 'upstream_error', 'Upstream stream failed')
          controller.enqueue(encoder.encode(`data: ${JSON.stringify(failure.toBody())}\n\n`))
          controller.close()
          return
        }
        if (next.done) {
          // Counted before [DONE] goes out: a client that saw the end of the stream is always billed.
          finish(false)
          controller.enqueue(DONE)
          controller.close()
          return
        }
        const chunk = next.value
        chunk.model = alias.name
        if (chunk.usage) usage = chunk.usage
        if (!includeUsage) {
          // The upstream was asked for usage on our behalf; the caller did not ask to see it.
          if (chunk.usage && chunk.choices.length === 0) continue
          delete chunk.usage
        }
        controller.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`))
        return
      }
    },
    async cancel() {
      // The caller disconnected: stop the upstream and count what happened.
      dispatched.scope.abort(clientClosed())
      finish(true)
      await iterator.return?.(clientClosed())
    },
  })

  return new Response(body, {
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' },
  })
}

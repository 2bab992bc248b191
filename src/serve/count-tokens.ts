import { invalidRequest, rateLimited } from '../errors'
import { setRateLimitHeaders } from '../http/headers'
import type { JsonBody } from '../wire/json-text'
import type { AnthropicHeaders } from '../providers/types'
import { dispatch } from '../routing/dispatch'
import { resolveAlias } from '../routing/table'
import { fromMessagesRequest, openaiCannotServe } from '../wire/anthropic/chat'
import type { MessagesRequest } from '../wire/anthropic/types'
import { applyEdits, replacement } from '../wire/json-text'
import { authorizeAlias, type ServeCall, type ServeDeps } from './serve'

/**
 * `POST /v1/messages/count_tokens`: Anthropic upstreams answer it themselves (the caller's text,
 * model replaced); OpenAI-kind upstreams count locally with the o200k tokenizer; the mock counts
 * words. Needs a key and a tier that may use the alias; it is not a request in usage, and consumes
 * no allowance, but is refused while the key's request window is full, so it cannot be used to get
 * around the limit.
 */
export async function countTokens(
  deps: ServeDeps,
  call: ServeCall,
  request: MessagesRequest,
  body: JsonBody | undefined,
  headers: AnthropicHeaders,
): Promise<string> {
  const { caller, record } = call
  const routing = deps.routing()
  const alias = resolveAlias(routing, request.model)
  record.alias = alias.name
  authorizeAlias(caller, alias)
  const state = deps.limiter.peek(caller.key.id, caller.limits, deps.now())
  setRateLimitHeaders(call.headers, state)
  if (state.remaining === 0) {
    const wait = Math.max(1, state.resetSeconds)
    throw rateLimited(`Rate limit reached: ${state.limit} requests per minute. Try again in ${wait} s.`, {
      code: 'rate_limit_exceeded',
      retryAfterSeconds: wait,
    })
  }
  const countable = alias.targets.filter((t) => t.provider.messages || (t.provider.countTokens && !openaiCannotServe(request)))
  if (countable.length === 0) throw invalidRequest(`No target of "${alias.name}" can count these tokens`, { code: 'unsupported_parameter', param: 'model' })
  const served = await dispatch(
    { ...alias, targets: countable },
    {
      clientSignal: call.clientSignal,
      circuits: deps.circuits,
      connections: deps.connections,
      deadlineMs: routing.deadlineMs,
      now: deps.now,
      onAttempt: (target, attempt) => {
        record.upstream = target.upstream.name
        record.upstreamModel = target.model
        record.attempts = attempt
        call.headers[deps.headers.model] = target.model
        call.headers[deps.headers.upstream] = target.upstream.name
      },
      onFailure: (target, error) => deps.log.warn({ upstream: target.upstream.name, code: error.code }, `token count attempt failed: ${error.message}`),
    },
    async (target, attempt) => {
      if (target.provider.messages) {
        const member = body?.outline.members?.get('model')
        const text =
          body && member ? applyEdits(body.text, [replacement(member, JSON.stringify(target.model))]) : JSON.stringify({ ...request, model: target.model })
        return (await target.provider.messages.countTokens(text, attempt, headers)).input_tokens
      }
      return target.provider.countTokens!(fromMessagesRequest(request, target.model))
    },
  )
  served.finish('ok')
  call.headers['content-type'] = 'application/json'
  return JSON.stringify({ input_tokens: served.value })
}

import { type Unsupported, unsupported } from '../errors'
import { setRateLimitHeaders } from '../http/headers'
import type { JsonBody } from '../wire/json-text'
import type { AnthropicHeaders } from '../providers/types'
import { type AttemptScope, dispatch } from '../routing/dispatch'
import { type Alias, resolveAlias, type Target } from '../routing/table'
import { openaiCannotServe } from '../wire/anthropic/cannot-serve'
import { toMessagesRequest } from '../wire/anthropic/request-from-chat'
import { fromMessagesRequest } from '../wire/anthropic/request-to-chat'
import type { MessagesRequest } from '../wire/anthropic/types'
import { applyEdits, replacement } from '../wire/json-text'
import type { ChatRequest } from '../wire/pivot/types'
import type { ServeCall } from './exchange'
import { authorizeAlias, type ServeDeps } from './serve'

/** How one API counts a request's tokens on a target: the same checks as serving it, and the count. */
export interface TokenCounter {
  /** The alias the request names. */
  model: string
  /** Why a target cannot count the request, or null. */
  cannotCount(target: Target): Unsupported | null
  count(target: Target, attempt: AttemptScope): Promise<number>
}

/** The alias with only the targets that can count the request; none left: the first one's reason is the 400. */
function countableTargets(alias: Alias, counter: TokenCounter): Alias {
  const problems = alias.targets.map((target) => counter.cannotCount(target))
  if (problems.every((problem) => problem === null)) return alias
  const targets = alias.targets.filter((_, i) => problems[i] === null)
  if (targets.length === 0) throw unsupported(problems[0]!)
  return { ...alias, targets }
}

/**
 * A translated request's input tokens on a target that has no counter in the caller's dialect:
 * Anthropic's counter (the Messages request, less `max_tokens`, which it does not take), else the
 * provider's own.
 */
export async function countPivotTokens(target: Target, chat: ChatRequest, attempt: AttemptScope): Promise<number> {
  if (target.provider.messages) {
    const { max_tokens: _, ...messages } = toMessagesRequest(chat, target.model).body
    return (await target.provider.messages.countTokens(JSON.stringify(messages), attempt, { version: null, beta: null })).input_tokens
  }
  return target.provider.countTokens!(chat, attempt)
}

/**
 * Counts a request's input tokens on a target of its alias (`count_tokens`, `input_tokens`). It is
 * admitted by the limiter like any request (so it counts in the key's request window, and is refused
 * with 429 when a limit is reached), but it is not a request in usage: it is released, not settled,
 * so it records nothing and charges nothing.
 */
export async function countTokensWith(deps: ServeDeps, call: ServeCall, counter: TokenCounter): Promise<number> {
  const { caller, record } = call
  const routing = deps.routing()
  const alias = countableTargets(resolveAlias(routing, counter.model), counter)
  record.alias = alias.name
  authorizeAlias(caller, alias)
  const admission = await deps.limiter.admit(caller.key.id, caller.limits, deps.now())
  setRateLimitHeaders(call.headers, admission.state)
  if (!admission.ok) {
    deps.metrics.refusals.inc(admission.reason)
    throw admission.error
  }
  try {
    const served = await dispatch(
      alias,
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
          call.headers[deps.headers.attempts] = String(attempt)
        },
        onFailure: (target, error) => deps.log.warn({ upstream: target.upstream.name, code: error.code }, `token count attempt failed: ${error.message}`),
      },
      (target, attempt) => counter.count(target, attempt),
    )
    served.finish('ok')
    return served.value
  } finally {
    // Whatever happened: the slot is free again, and nothing is recorded.
    await admission.release()
  }
}

/**
 * `POST /v1/messages/count_tokens`: Anthropic upstreams answer it themselves (the caller's text,
 * model replaced); OpenAI-kind upstreams count locally with the o200k tokenizer, in a worker
 * thread; the mock counts words.
 */
export async function countTokens(
  deps: ServeDeps,
  call: ServeCall,
  request: MessagesRequest,
  body: JsonBody | undefined,
  headers: AnthropicHeaders,
): Promise<string> {
  const counted = await countTokensWith(deps, call, {
    model: request.model,
    cannotCount(target) {
      if (target.provider.messages) return null
      if (!target.provider.countTokens)
        return { code: 'unsupported_parameter', param: 'model', message: `The upstream "${target.upstream.name}" cannot count tokens` }
      return openaiCannotServe(request) ?? target.provider.cannotServe?.(fromMessagesRequest(request, target.model)) ?? null
    },
    async count(target, attempt) {
      if (target.provider.messages) {
        const member = body?.outline.members?.get('model')
        const text =
          body && member ? applyEdits(body.text, [replacement(member, JSON.stringify(target.model))]) : JSON.stringify({ ...request, model: target.model })
        return (await target.provider.messages.countTokens(text, attempt, headers)).input_tokens
      }
      return target.provider.countTokens!(fromMessagesRequest(request, target.model), attempt)
    },
  })
  call.headers['content-type'] = 'application/json'
  return JSON.stringify({ input_tokens: counted })
}

import { AnswerAssembler } from '../conversations/answer'
import type { ThreadAnswer, ThreadTurn } from '../conversations/threads'
import type { GatewayError } from '../errors'
import type { AnthropicHeaders } from '../providers/types'
import type { Alias, Target } from '../routing/table'
import { estimatedPromptTokens, inputBound } from '../spend/estimate'
import { toMessageResponse } from '../wire/anthropic/answer-from-chat'
import { droppedFromMessages, messagesFieldOf, openaiCannotServe } from '../wire/anthropic/cannot-serve'
import { anthropicErrorBody } from '../wire/anthropic/errors'
import { EventsFromChunks, sseEvent } from '../wire/anthropic/events-from-chunks'
import { fromMessagesRequest } from '../wire/anthropic/request-to-chat'
import { type ThinkingSigner, withoutGatewayThinking } from '../wire/anthropic/signature'
import { GATEWAY_SIGNATURE_PREFIX } from '../wire/pivot/gateway-signature'
import type { MessagesRequest } from '../wire/anthropic/types'
import { toUsage } from '../wire/anthropic/usage'
import { applyEdits, type JsonBody, replacement, withTopLevelValue } from '../wire/json-text'
import { chunksOfCompletion } from '../cache/chunks'
import { toChatCompletion } from '../wire/anthropic/answer-to-chat'
import type { MessageResponse } from '../wire/anthropic/types'
import type { Usage } from '../wire/pivot/types'
import type { CacheSide, Exchange } from './exchange'
import { type AnswerWatch, relayEvents, translateChunks } from './messages-streams'

/**
 * The caller's own text for an Anthropic upstream, only its top-level model replaced; re-encoded when
 * it is not the request as sent (a thread the gateway rebuilt) or carries thinking the gateway
 * signed, which Anthropic would refuse.
 */
function passthroughBody(request: MessagesRequest, body: JsonBody | undefined, asSent: boolean, model: string): string {
  const member = body?.outline.members?.get('model')
  if (asSent && body && member && !body.text.includes(`"${GATEWAY_SIGNATURE_PREFIX}`))
    return applyEdits(body.text, [replacement(member, JSON.stringify(model))])
  return JSON.stringify({ ...withoutGatewayThinking(request), model })
}

/** What the Messages API's exchange needs besides the request. */
export interface MessagesContext {
  /** The caller's anthropic-version and anthropic-beta, for Anthropic upstreams. */
  headers: AnthropicHeaders
  /** The request's id: a translated answer's id is `msg_` and it. */
  requestId: string
  /** Signs thinking made from another dialect's reasoning, and checks it when it comes back. */
  signer: ThinkingSigner
  /** The request's message thread, when it has one (src/conversations/threads.ts). */
  thread: ThreadTurn | null
  /** Told when a thread turn could not be recorded: the answer still stands, and the next continue replays. */
  onRecordError(error: unknown): void
}

const NONE: readonly string[] = []

/** Records a thread turn's answer before its end reaches the caller, who may continue at once (awaited with the count). */
function recordTurn(context: MessagesContext, answer: ThreadAnswer, target: Target): Promise<void> {
  const native = target.provider.messages !== undefined
  return context.thread!.record(answer, target.upstream.name, native).then(
    () => {},
    (error: unknown) => context.onRecordError(error),
  )
}

/** The watch that puts a streamed thread turn's answer together and records it. */
function threadWatch(context: MessagesContext, target: Target): AnswerWatch | undefined {
  const turn = context.thread
  if (!turn) return undefined
  const assembler = new AnswerAssembler()
  return {
    event: (event) => assembler.push(event),
    async finished() {
      const answer = assembler.answer()
      if (answer) await recordTurn(context, answer, target)
    },
    failed: () => void turn.release().catch(context.onRecordError),
  }
}

/** A Messages request's side of the cache: a cached message streams through the same translation as an OpenAI-shaped target's answer. */
function cacheSide(request: MessagesRequest, text: string | undefined, id: string, signer: ThinkingSigner): CacheSide {
  return {
    request,
    text,
    fromCache(answer: string, usage: Usage | null, stream: boolean) {
      if (!stream) return answer
      const completion = toChatCompletion(JSON.parse(answer) as MessageResponse, { json: null }, request.model, 0)
      const events = new EventsFromChunks(request.model, { id, inputTokens: usage?.prompt_tokens ?? 0, sign: signer.sign })
      const out = chunksOfCompletion(completion, usage).flatMap((chunk) => events.push(chunk))
      return [...out, ...events.end()].map(sseEvent).join('')
    },
  }
}

/**
 * Anthropic's Messages API, served by any target: Anthropic upstreams get the caller's own text
 * (so cache_control, citations and new features keep working) and answer as they do; OpenAI-shaped
 * ones (OpenAI-compatible, the mock) are translated both ways (src/wire/anthropic). A message
 * thread is sent on to the Anthropic upstream that holds it, or held by the gateway for the others.
 */
export function messagesExchange(request: MessagesRequest, body: JsonBody | undefined, context: MessagesContext): Exchange {
  const { headers, signer, thread } = context
  const id = `msg_${context.requestId}`
  /** What a target gets: the request as sent, or the thread's full history for a target that does not hold it. */
  const sent = (native: boolean) => thread?.requestFor(native) ?? { request, asSent: true }
  const translated = (target: Target, stream: boolean) =>
    fromMessagesRequest({ ...sent(false).request, stream }, target.model, {
      maxEffort: target.upstream.maxReasoningEffort,
      midSystem: target.upstream.midSystem,
      verifyThinking: signer.verify,
      keepThinking: target.provider.readsThinking && ((signature) => target.provider.readsThinking!(signature, target.model)),
    })
  const upstreamBody = (target: Target) => {
    const { request: forTarget, asSent } = sent(true)
    return passthroughBody(forTarget, body, asSent, target.model)
  }
  let dropped: readonly string[] | null = null
  return {
    model: request.model,
    checkAlias(alias: Alias) {
      // A thread an Anthropic upstream holds is reachable only through an alias that names that upstream.
      if (thread?.heldBy && !alias.targets.some((t) => thread.serves(t.upstream.name, t.provider.messages !== undefined))) throw thread.notServable()
    },
    cannotServe(target) {
      const native = target.provider.messages !== undefined
      if (thread && !thread.serves(target.upstream.name, native)) {
        return { code: 'unsupported_parameter', param: 'thread', message: `Upstream "${target.upstream.name}" does not hold this message thread` }
      }
      if (native) return null
      return openaiCannotServe(sent(false).request) ?? target.provider.cannotServe?.(translated(target, false)) ?? null
    },
    dropped(target) {
      if (target.provider.messages) return NONE
      dropped ??= droppedFromMessages(request)
      // What the translation lost, and what the target then leaves out of the translated request.
      const byTarget = target.provider.dropped?.(translated(target, false)) ?? NONE
      return byTarget.length === 0 ? dropped : [...new Set([...dropped, ...byTarget.map((field) => messagesFieldOf(field, request))])]
    },
    async complete(target, attempt) {
      const messages = target.provider.messages
      if (messages) {
        const { text, message } = await messages.complete(upstreamBody(target), attempt, headers)
        const kept = thread ? recordTurn(context, { id: message.id, content: message.content }, target) : undefined
        const answer =
          withTopLevelValue(text, 'model', JSON.stringify(message.model), JSON.stringify(request.model)) ?? JSON.stringify({ ...message, model: request.model })
        return { body: answer, usage: toUsage(message.usage ?? {}), kept }
      }
      const { completion } = await target.provider.complete(translated(target, false), attempt)
      const message = toMessageResponse(completion, request.model, { id, sign: signer.sign })
      const kept = thread ? recordTurn(context, message, target) : undefined
      return { body: JSON.stringify(message), usage: completion.usage ?? null, kept }
    },
    stream:
      request.stream === true
        ? {
            async open(target, attempt) {
              const messages = target.provider.messages
              const watch = threadWatch(context, target)
              if (messages) return relayEvents(await messages.stream(upstreamBody(target), attempt, headers), request.model, watch)
              // message_start says an estimate of the input: the exact count comes with the last event.
              const events = new EventsFromChunks(request.model, {
                id,
                inputTokens: estimatedPromptTokens(body?.text ?? JSON.stringify(request)),
                sign: signer.sign,
              })
              return translateChunks(await target.provider.stream(translated(target, true), attempt), events, watch)
            },
            // A broken stream ends with Anthropic's error event, and no message_stop.
            failureEvent: (error: GatewayError) => `event: error\ndata: ${JSON.stringify(anthropicErrorBody(error))}\n\n`,
            estimatedPromptTokens: () => estimatedPromptTokens(body?.text ?? JSON.stringify(request)),
          }
        : null,
    tokenBound: () => ({ inputTokens: inputBound(body?.text ?? JSON.stringify(sent(false).request)), outputTokens: request.max_tokens }),
    // A thread's turn depends on what the gateway holds of it, not on its text alone: never cached.
    cache: thread ? undefined : cacheSide(request, body?.text, id, signer),
  }
}

import type { GatewayError } from '../errors'
import type { JsonBody } from '../wire/json-text'
import type { AnthropicEvent, AnthropicHeaders } from '../providers/types'
import type { Target } from '../routing/table'
import { toMessageResponse } from '../wire/anthropic/answer-from-chat'
import { openaiCannotServe } from '../wire/anthropic/cannot-serve'
import { fromMessagesRequest } from '../wire/anthropic/request-to-chat'
import { toUsage } from '../wire/anthropic/usage'
import { anthropicErrorBody } from '../wire/anthropic/errors'
import { EventsFromChunks, sseEvent } from '../wire/anthropic/events-from-chunks'
import type { MessagesRequest, StreamEvent, Usage as AnthropicUsage } from '../wire/anthropic/types'
import { applyEdits, replacement, uniqueMember, withTopLevelValue } from '../wire/json-text'
import type { ChatCompletionChunk, RawChunk, StreamChunk } from '../wire/openai/types'
import { estimatedPromptTokens, inputBound } from '../spend/estimate'
import { eventGeneratedChars } from '../wire/anthropic/generated'
import { generatedChars } from '../wire/openai/generated'
import type { EventStream, Exchange } from './exchange'

/** The caller's own text for an Anthropic upstream, only its top-level model replaced. */
function passthroughBody(request: MessagesRequest, body: JsonBody | undefined, model: string): string {
  const member = body?.outline.members?.get('model')
  return body && member ? applyEdits(body.text, [replacement(member, JSON.stringify(model))]) : JSON.stringify({ ...request, model })
}

/**
 * An Anthropic upstream's events relayed as sent: `message.model` in message_start becomes the
 * alias, usage is read from message_start and message_delta, and message_stop is held back until
 * the request is counted.
 */
async function relayEvents(iterator: AsyncIterator<AnthropicEvent[]>, alias: string): Promise<EventStream> {
  let pending: IteratorResult<AnthropicEvent[]> | null = await iterator.next()
  const usage: Partial<AnthropicUsage> = {}
  let stop = ''
  let generated = 0
  const relay = ({ data, event }: AnthropicEvent): string => {
    generated += eventGeneratedChars(event)
    if (event.type === 'message_start') {
      Object.assign(usage, event.message.usage)
      const model = typeof event.message.model === 'string' ? uniqueMember(data, 'model', JSON.stringify(event.message.model)) : null
      data = model ? applyEdits(data, [replacement(model, JSON.stringify(alias))]) : JSON.stringify({ ...event, message: { ...event.message, model: alias } })
    } else if (event.type === 'message_delta') {
      Object.assign(usage, event.usage)
    } else if (event.type === 'message_stop') {
      stop = `event: message_stop\ndata: ${data}\n\n`
      return ''
    }
    return `event: ${event.type}\ndata: ${data}\n\n`
  }
  return {
    async next() {
      const result = pending ?? (await iterator.next())
      pending = null
      return result.done ? null : result.value.map(relay).join('')
    },
    usage: () => toUsage(usage),
    generated: () => generated,
    end: () => stop,
    cancel: async () => void (await iterator.return?.()),
  }
}

/** An OpenAI-shaped upstream's chunks as Anthropic's event sequence (src/wire/anthropic/stream.ts). */
async function translateChunks(iterator: AsyncIterator<StreamChunk[]>, translator: EventsFromChunks): Promise<EventStream> {
  let pending: IteratorResult<StreamChunk[]> | null = await iterator.next()
  let generated = 0
  // A chunk that is not valid JSON ends the stream, after the events of the valid chunks before it.
  let broken: unknown = null
  const events = (batch: StreamChunk[]): StreamEvent[] => {
    const out: StreamEvent[] = []
    for (const chunk of batch) {
      let parsed: ChatCompletionChunk
      try {
        parsed = 'object' in chunk ? (chunk as ChatCompletionChunk) : (JSON.parse((chunk as RawChunk).data) as ChatCompletionChunk)
      } catch (error) {
        broken = error
        if (out.length === 0) throw error
        break
      }
      out.push(...translator.push(parsed))
    }
    return out
  }
  return {
    async next() {
      if (broken) throw broken
      const result = pending ?? (await iterator.next())
      pending = null
      if (result.done) return null
      generated += generatedChars(result.value)
      return events(result.value).map(sseEvent).join('')
    },
    usage: () => translator.usage,
    generated: () => generated,
    end: () => translator.end().map(sseEvent).join(''),
    cancel: async () => void (await iterator.return?.()),
  }
}

/**
 * Anthropic's Messages API, served by any target: Anthropic upstreams get the caller's own text
 * (so cache_control, citations and new features keep working) and answer as they do; OpenAI-shaped
 * ones (OpenAI-compatible, the mock) are translated both ways (src/wire/anthropic).
 */
export function messagesExchange(request: MessagesRequest, body: JsonBody | undefined, headers: AnthropicHeaders): Exchange {
  const translated = (target: Target, stream: boolean) => fromMessagesRequest({ ...request, stream }, target.model, target.upstream.maxReasoningEffort)
  return {
    model: request.model,
    cannotServe(target) {
      if (target.provider.messages) return null
      return openaiCannotServe(request) ?? target.provider.cannotServe?.(translated(target, false)) ?? null
    },
    async complete(target, attempt) {
      const messages = target.provider.messages
      if (messages) {
        const { text, message } = await messages.complete(passthroughBody(request, body, target.model), attempt, headers)
        const answer =
          withTopLevelValue(text, 'model', JSON.stringify(message.model), JSON.stringify(request.model)) ?? JSON.stringify({ ...message, model: request.model })
        return { body: answer, usage: toUsage(message.usage ?? {}) }
      }
      const { completion } = await target.provider.complete(translated(target, false), attempt)
      return { body: JSON.stringify(toMessageResponse(completion, request.model)), usage: completion.usage ?? null }
    },
    stream:
      request.stream === true
        ? {
            async open(target, attempt) {
              const messages = target.provider.messages
              if (messages) return relayEvents(await messages.stream(passthroughBody(request, body, target.model), attempt, headers), request.model)
              return translateChunks(await target.provider.stream(translated(target, true), attempt), new EventsFromChunks(request.model))
            },
            // A broken stream ends with Anthropic's error event, and no message_stop.
            failureEvent: (error: GatewayError) => `event: error\ndata: ${JSON.stringify(anthropicErrorBody(error))}\n\n`,
            estimatedPromptTokens: () => estimatedPromptTokens(body?.text ?? JSON.stringify(request)),
          }
        : null,
    tokenBound: () => ({ inputTokens: inputBound(body?.text ?? JSON.stringify(request)), outputTokens: request.max_tokens }),
  }
}

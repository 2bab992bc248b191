import type { AnthropicEvent } from '../providers/types'
import { eventGeneratedChars } from '../wire/anthropic/generated'
import type { EventsFromChunks } from '../wire/anthropic/events-from-chunks'
import { sseEvent } from '../wire/anthropic/events-from-chunks'
import type { StreamEvent, Usage as AnthropicUsage } from '../wire/anthropic/types'
import { toUsage } from '../wire/anthropic/usage'
import { applyEdits, replacement, uniqueMember } from '../wire/json-text'
import { generatedChars } from '../wire/pivot/generated'
import type { ChatCompletionChunk, RawChunk, StreamChunk } from '../wire/pivot/types'
import type { EventStream } from './exchange'

/** What watches a Messages answer as it streams: a thread turn records it before its end goes out. */
export interface AnswerWatch {
  /** Each event of the answer, as the caller gets it. */
  event(event: StreamEvent): void
  /** The upstream finished the answer; resolves once what must happen before its end goes out has (awaited with the count). */
  finished(): Promise<void>
  /** The stream broke or the caller left: the answer will not be finished. */
  failed(): void
}

/** A relay's next() that tells the watch when the stream breaks; the relay's own when nothing watches (no cost per read). */
function watched(next: () => Promise<string | null>, watch: AnswerWatch | undefined): () => Promise<string | null> {
  if (!watch) return next
  return async () => {
    try {
      return await next()
    } catch (error) {
      watch.failed()
      throw error
    }
  }
}

/**
 * An Anthropic upstream's events relayed as sent: `message.model` in message_start becomes the
 * alias, usage is read from message_start and message_delta, and message_stop is held back until
 * the request is counted.
 */
export async function relayEvents(iterator: AsyncIterator<AnthropicEvent[]>, alias: string, watch?: AnswerWatch): Promise<EventStream> {
  let pending: IteratorResult<AnthropicEvent[]> | null = await iterator.next()
  const usage: Partial<AnthropicUsage> = {}
  let stop = ''
  let kept: Promise<void> | null = null
  let generated = 0
  const relay = ({ data, event }: AnthropicEvent): string => {
    generated += eventGeneratedChars(event)
    watch?.event(event)
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
    next: watched(async () => {
      const result = pending ?? (await iterator.next())
      pending = null
      if (!result.done) return result.value.map(relay).join('')
      kept ??= watch?.finished() ?? null
      return null
    }, watch),
    usage: () => toUsage(usage),
    generated: () => generated,
    end: () => stop,
    kept: () => kept ?? Promise.resolve(),
    async cancel() {
      watch?.failed()
      await iterator.return?.()
    },
  }
}

/** An OpenAI-shaped upstream's chunks as Anthropic's event sequence (src/wire/anthropic/events-from-chunks.ts). */
export async function translateChunks(iterator: AsyncIterator<StreamChunk[]>, translator: EventsFromChunks, watch?: AnswerWatch): Promise<EventStream> {
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
  let tail = ''
  let kept: Promise<void> | null = null
  return {
    next: watched(async () => {
      if (broken) throw broken
      const result = pending ?? (await iterator.next())
      pending = null
      if (!result.done) {
        generated += generatedChars(result.value)
        const batch = events(result.value)
        if (watch) for (const event of batch) watch.event(event)
        return batch.map(sseEvent).join('')
      }
      // The closing events are made now, so that a watch sees the whole answer before its end goes out.
      const closing = translator.end()
      if (watch) for (const event of closing) watch.event(event)
      tail = closing.map(sseEvent).join('')
      kept ??= watch?.finished() ?? null
      return null
    }, watch),
    usage: () => translator.usage,
    generated: () => generated,
    end: () => tail,
    kept: () => kept ?? Promise.resolve(),
    async cancel() {
      watch?.failed()
      await iterator.return?.()
    },
  }
}

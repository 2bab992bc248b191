import { sseEvent, type EventsFromChunks } from '../wire/openai-responses/events-from-chunks'
import { generatedChars } from '../wire/pivot/generated'
import type { ChatCompletionChunk, RawChunk, StreamChunk } from '../wire/pivot/types'
import type { EventStream } from './exchange'

/**
 * An OpenAI-shaped upstream's chunks as the Responses event sequence (wire/openai-responses/
 * events-from-chunks.ts). The terminal event (response.completed or .incomplete) is held back until
 * the request is counted; `finished` runs once the answer is whole, before that event goes out (a
 * response kept for `previous_response_id` must be there when the caller sees it completed).
 */
export async function responseEventsFromChunks(
  iterator: AsyncIterator<StreamChunk[]>,
  events: EventsFromChunks,
  finished: () => Promise<void>,
): Promise<EventStream> {
  let pending: IteratorResult<StreamChunk[]> | null = await iterator.next()
  let generated = 0
  let terminal = ''
  let started = false
  // A chunk that is not valid JSON ends the stream, after the events of the valid chunks before it.
  let broken: unknown = null
  const text = (batch: StreamChunk[]): string => {
    let out = ''
    if (!started) {
      started = true
      out += events.start().map(sseEvent).join('')
    }
    for (const chunk of batch) {
      let parsed: ChatCompletionChunk
      try {
        parsed = 'object' in chunk ? (chunk as ChatCompletionChunk) : (JSON.parse((chunk as RawChunk).data) as ChatCompletionChunk)
      } catch (error) {
        broken = error
        if (out === '') throw error
        break
      }
      // Counted from the parse this needs anyway, not by searching the chunk's text again.
      generated += generatedChars([parsed])
      out += events.push(parsed).map(sseEvent).join('')
    }
    return out
  }
  return {
    async next() {
      if (broken) throw broken
      const result = pending ?? (await iterator.next())
      pending = null
      if (!result.done) return text(result.value)
      // Called again once the upstream ended: the end is the terminal event, sent by `end()`.
      if (terminal !== '') return null
      const closing = events.end()
      terminal = sseEvent(closing.pop()!)
      await finished()
      // The closing items (whole function calls, the message's done events) go out before the end.
      return closing.map(sseEvent).join('')
    },
    usage: () => events.usage,
    generated: () => generated,
    end: () => terminal,
    cancel: async () => void (await iterator.return?.()),
  }
}

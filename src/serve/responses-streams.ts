import { sseEvent, type EventsFromChunks } from '../wire/openai-responses/events-from-chunks'
import { generatedChars } from '../wire/pivot/generated'
import type { ChatCompletionChunk, RawChunk, StreamChunk } from '../wire/pivot/types'
import type { EventStream } from './exchange'

/**
 * An OpenAI-shaped upstream's chunks as the Responses event sequence (wire/openai-responses/
 * events-from-chunks.ts). The closing events, through the terminal one (response.completed or
 * .incomplete), are held back until the request is counted. `finished` starts once the answer is
 * whole; the stream's `kept` is what it resolves to, awaited with the count before the end goes out
 * (a response kept for `previous_response_id` must be there when the caller sees it completed).
 */
export async function responseEventsFromChunks(
  iterator: AsyncIterator<StreamChunk[]>,
  events: EventsFromChunks,
  finished: () => Promise<void>,
): Promise<EventStream> {
  let pending: IteratorResult<StreamChunk[]> | null = await iterator.next()
  let generated = 0
  let terminal = ''
  let kept: Promise<void> | null = null
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
      // The closing events (whole function calls, the message's done events, then the terminal one)
      // go out together once the request is counted: one write, not two.
      if (kept === null) {
        terminal = events.end().map(sseEvent).join('')
        kept = finished()
      }
      return null
    },
    usage: () => events.usage,
    generated: () => generated,
    end: () => terminal,
    kept: () => kept ?? Promise.resolve(),
    cancel: async () => void (await iterator.return?.()),
  }
}

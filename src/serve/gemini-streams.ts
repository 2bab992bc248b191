import type { GeminiEvent } from '../providers/types'
import { type EventsFromChunks, sseChunk } from '../wire/gemini/events-from-chunks'
import type { UsageMetadata } from '../wire/gemini/types'
import { toUsage } from '../wire/gemini/usage'
import { applyEdits, replacement, uniqueMember } from '../wire/json-text'
import { generatedChars, stringMemberChars } from '../wire/pivot/generated'
import type { ChatCompletionChunk, RawChunk, StreamChunk } from '../wire/pivot/types'
import type { EventStream } from './exchange'

/** A Gemini chunk's text with `modelVersion` the alias (the upstream's model is in x-svc-model); re-encoded only when it cannot be edited in place. */
function withAlias({ data, chunk }: GeminiEvent, alias: string): string {
  if (typeof chunk.modelVersion !== 'string') return data
  const member = uniqueMember(data, 'modelVersion', JSON.stringify(chunk.modelVersion))
  return member ? applyEdits(data, [replacement(member, JSON.stringify(alias))]) : JSON.stringify({ ...chunk, modelVersion: alias })
}

/**
 * A Gemini or Vertex AI upstream's chunks relayed as sent, `modelVersion` made the alias; usage read
 * from the last `usageMetadata`. Gemini's stream has no closing event: its last chunks are those from
 * the one with a finish reason on, and they are held back until the request is counted.
 */
export async function relayGeminiEvents(iterator: AsyncIterator<GeminiEvent[]>, alias: string): Promise<EventStream> {
  let pending: IteratorResult<GeminiEvent[]> | null = await iterator.next()
  let usage: UsageMetadata | undefined
  let generated = 0
  const held: string[] = []
  const relay = (event: GeminiEvent): string => {
    const { chunk } = event
    if (chunk.usageMetadata) usage = chunk.usageMetadata
    generated += stringMemberChars(event.data, '"text":"')
    const text = `data: ${withAlias(event, alias)}\r\n\r\n`
    if (held.length === 0 && !chunk.candidates?.some((c) => c.finishReason)) return text
    held.push(text)
    return ''
  }
  return {
    async next() {
      const result = pending ?? (await iterator.next())
      pending = null
      return result.done ? null : result.value.map(relay).join('')
    },
    usage: () => (usage ? toUsage(usage) : null),
    generated: () => generated,
    end: () => held.join(''),
    async cancel() {
      await iterator.return?.()
    },
  }
}

/** A pivot upstream's chunks as Gemini chunks (src/wire/gemini/events-from-chunks.ts); the last one held until the request is counted. */
export async function translateGeminiChunks(iterator: AsyncIterator<StreamChunk[]>, translator: EventsFromChunks): Promise<EventStream> {
  let pending: IteratorResult<StreamChunk[]> | null = await iterator.next()
  let generated = 0
  // A chunk that is not valid JSON ends the stream, after the chunks of the valid ones before it.
  let broken: unknown = null
  const translate = (batch: StreamChunk[]): string => {
    let out = ''
    for (const chunk of batch) {
      let parsed: ChatCompletionChunk
      try {
        parsed = 'object' in chunk ? (chunk as ChatCompletionChunk) : (JSON.parse((chunk as RawChunk).data) as ChatCompletionChunk)
      } catch (error) {
        broken = error
        if (out === '') throw error
        break
      }
      for (const translated of translator.push(parsed)) out += sseChunk(translated)
    }
    return out
  }
  let tail = ''
  return {
    async next() {
      if (broken) throw broken
      const result = pending ?? (await iterator.next())
      pending = null
      if (!result.done) {
        generated += generatedChars(result.value)
        return translate(result.value)
      }
      tail = translator.end().map(sseChunk).join('')
      return null
    },
    usage: () => translator.usage,
    generated: () => generated,
    end: () => tail,
    async cancel() {
      await iterator.return?.()
    },
  }
}

import { applyEdits, outlineJson, removal, replacement, soleStringValue, uniqueMember } from '../json-text'
import type { ChatCompletionChunk, RawChunk, StreamChunk, Usage } from '../pivot/types'

/** The edit that adds `"usage":null` as the chunk's last member, before its closing brace. */
function nullUsageAtEnd(data: string) {
  const end = data.lastIndexOf('}')
  return { start: end, end, text: ',"usage":null' }
}

/**
 * A chunk whose `object` is empty, as Azure writes its first chunk (the prompt's content-filter
 * results, no choices), named `chat.completion.chunk` as every chunk is in OpenAI's published
 * document: a client generated from it refuses any other value.
 */
function typedChunk(data: string): string {
  const blank = uniqueMember(data, 'object', '""')
  return blank === null ? data : applyEdits(data, [replacement(blank, '"chat.completion.chunk"')])
}

/**
 * Turns upstream chunks into the caller's SSE text: `model` becomes the alias, usage is captured
 * (and dropped when the caller did not ask for it). Raw JSON from OpenAI-compatible upstreams is
 * rewritten as text: only chunks carrying usage are parsed; the rest get their top-level model
 * replaced in place.
 */
export class ChunkRelay {
  usage: Usage | null = null
  /** Why the relay stopped: a chunk that could not be read. */
  private broken: unknown = null
  /** The upstream's model as it writes it (JSON-quoted), learnt from its first chunk. */
  private upstreamModel: string | null = null
  private readonly quotedAlias: string

  constructor(
    private readonly alias: string,
    private readonly includeUsage: boolean,
  ) {
    this.quotedAlias = JSON.stringify(alias)
  }

  /**
   * SSE text for a batch of chunks ('' when every chunk in it is dropped). A chunk that is not valid
   * JSON ends the relay, but only after the valid chunks before it: they go out now, and the next
   * call throws.
   */
  wire(batch: StreamChunk[]): string {
    if (this.broken) throw this.broken
    let out = ''
    for (const chunk of batch) {
      let json: string | null
      try {
        json = 'object' in chunk ? this.objectJson(chunk as ChatCompletionChunk) : this.rawJson((chunk as RawChunk).data)
      } catch (error) {
        this.broken = error
        if (out === '') throw error
        break
      }
      if (json !== null) out += `data: ${json}\n\n`
    }
    return out
  }

  private objectJson(chunk: ChatCompletionChunk): string | null {
    chunk.model = this.alias
    if (chunk.usage) this.usage = chunk.usage
    if (!this.includeUsage) {
      // The upstream was asked for usage on our behalf; the caller did not ask to see it.
      if (chunk.usage && chunk.choices.length === 0) return null
      delete chunk.usage
    } else {
      // OpenAI's document: with include_usage, every chunk before the usage chunk says `"usage": null`.
      chunk.usage ??= null
    }
    return JSON.stringify(chunk)
  }

  private rawJson(raw: string): string | null {
    const data = raw.includes('""') ? typedChunk(raw) : raw
    // The upstream's model as it writes it, learnt from its first chunk that names one (Azure's
    // first, prompt-filter chunk has `"model": ""`): then every chunk's model is found by its exact
    // spelling, without an outline.
    const learnt = this.upstreamModel ?? soleStringValue(data, 'model')
    if (learnt !== '""') this.upstreamModel = learnt
    const model = learnt === null ? null : uniqueMember(data, 'model', learnt)
    if (model === null) return this.outlinedJson(data)
    const usageAt = data.indexOf('"usage"')
    if (usageAt === -1) {
      const edits = [replacement(model, this.quotedAlias)]
      // An upstream that leaves `"usage": null` out: the caller who asked for usage gets it in every chunk, as OpenAI writes it.
      if (this.includeUsage) edits.push(nullUsageAtEnd(data))
      return applyEdits(data, edits)
    }
    if (data.indexOf('"usage"', usageAt + 7) !== -1) return this.outlinedJson(data)
    // `"usage":null`, written in every chunk by an upstream asked for usage: gone unless the caller asked.
    const nullUsage = uniqueMember(data, 'usage', 'null')
    if (nullUsage !== null) {
      const edits = [replacement(model, this.quotedAlias)]
      if (!this.includeUsage) edits.push(removal(data, nullUsage))
      return applyEdits(data, edits)
    }
    // The usage chunk, once per stream.
    const chunk = JSON.parse(data) as ChatCompletionChunk
    if (chunk.usage) this.usage = chunk.usage
    if (this.includeUsage) return applyEdits(data, [replacement(model, this.quotedAlias)])
    return this.objectJson(chunk)
  }

  /** Any chunk, exactly: its top-level members found by a full outline. */
  private outlinedJson(data: string): string | null {
    const { members, duplicate } = outlineJson(data, Number.POSITIVE_INFINITY)
    const model = members?.get('model')
    if (!members || model === undefined || duplicate !== null) return this.objectJson(JSON.parse(data) as ChatCompletionChunk)
    const edits = [replacement(model, this.quotedAlias)]
    const usage = members.get('usage')
    if (usage !== undefined) {
      const hasUsage = !data.startsWith('null', usage.valueStart)
      if (hasUsage) this.usage = JSON.parse(data.slice(usage.valueStart, usage.valueEnd)) as Usage
      if (!this.includeUsage) {
        // The upstream was asked for usage on the caller's behalf; the caller did not ask to see it.
        const choices = members.get('choices')
        if (hasUsage && choices && /^\[\s*\]$/.test(data.slice(choices.valueStart, choices.valueEnd))) return null
        edits.push(removal(data, usage))
      }
    }
    return applyEdits(data, edits)
  }
}

import { applyEdits, outlineJson, removal, replacement } from '../wire/json-text'
import type { ChatCompletion, ChatCompletionChunk, RawChunk, StreamChunk, Usage } from '../wire/openai/types'

/**
 * JSON text with its top-level `model` member set to `quoted`, or null when it has none or has it
 * twice (then the caller serializes the parsed object). Only the top-level member changes: a
 * "model" key nested anywhere else, or inside a string, is content.
 */
function withTopLevelModel(json: string, quoted: string): string | null {
  const { members, duplicate } = outlineJson(json, Number.POSITIVE_INFINITY)
  const model = members?.get('model')
  return model === undefined || duplicate !== null ? null : applyEdits(json, [replacement(model, quoted)])
}

/**
 * A non-streaming completion's body for the caller, with `model` set to the alias. The upstream's own
 * text is relayed when possible (only the model swapped); otherwise the object is serialized.
 */
export function completionJson(completion: ChatCompletion, upstreamText: string | null, alias: string): string {
  if (upstreamText !== null && completion.usage) {
    const swapped = withTopLevelModel(upstreamText, JSON.stringify(alias))
    if (swapped !== null) return swapped
  }
  completion.model = alias
  completion.usage ??= { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
  return JSON.stringify(completion)
}

/**
 * Turns upstream chunks into the caller's SSE text: `model` becomes the alias, usage is captured
 * (and dropped when the caller did not ask for it). Raw JSON from OpenAI-compatible upstreams is
 * rewritten as text: only chunks carrying usage are parsed; the rest get their top-level model
 * replaced in place.
 */
export class ChunkRelay {
  usage: Usage | null = null
  private readonly quotedAlias: string

  constructor(
    private readonly alias: string,
    private readonly includeUsage: boolean,
  ) {
    this.quotedAlias = JSON.stringify(alias)
  }

  /** SSE text for a batch of chunks ('' when every chunk in it is dropped). */
  wire(batch: StreamChunk[]): string {
    let out = ''
    for (const chunk of batch) {
      const json = 'object' in chunk ? this.objectJson(chunk as ChatCompletionChunk) : this.rawJson((chunk as RawChunk).data)
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
    }
    return JSON.stringify(chunk)
  }

  private rawJson(data: string): string | null {
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

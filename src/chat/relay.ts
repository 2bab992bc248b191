import type { ChatCompletion, ChatCompletionChunk, RawChunk, StreamChunk, Usage } from './types'

/** `"model":"<name>"` exactly as JSON.stringify (and every OpenAI-compatible server seen) writes it. */
export const modelField = (model: string): string => `"model":${JSON.stringify(model)}`

/**
 * JSON text with its one `"model":...` field replaced, or null when the field is not written that
 * way or appears more than once: then the caller re-serializes instead.
 */
export function swapModel(json: string, field: string, replacement: string): string | null {
  const at = json.indexOf(field)
  if (at === -1 || json.indexOf(field, at + field.length) !== -1) return null
  return json.slice(0, at) + replacement + json.slice(at + field.length)
}

/**
 * A non-streaming completion's body for the caller, with `model` set to the alias. The upstream's own
 * text is relayed when possible (only the model swapped); otherwise the object is serialized.
 */
export function completionJson(completion: ChatCompletion, upstreamText: string | null, alias: string): string {
  if (upstreamText !== null && completion.usage && typeof completion.model === 'string') {
    const swapped = swapModel(upstreamText, modelField(completion.model), modelField(alias))
    if (swapped !== null) return swapped
  }
  completion.model = alias
  completion.usage ??= { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
  return JSON.stringify(completion)
}

/**
 * Turns upstream chunks into the caller's SSE text: `model` becomes the alias, usage is captured
 * (and dropped when the caller did not ask for it). Raw JSON from OpenAI-compatible upstreams is
 * rewritten as text: only the first chunk and usage chunks are parsed; the rest get the model
 * swapped by a string replace.
 */
export class ChunkRelay {
  usage: Usage | null = null
  private needle: string | null = null
  private readonly replacement: string

  constructor(
    private readonly alias: string,
    private readonly includeUsage: boolean,
  ) {
    this.replacement = modelField(alias)
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
    if (this.needle !== null && !data.includes('"usage":{')) {
      // The fast path: the upstream's model string, found as the upstream wrote it.
      const swapped = swapModel(data, this.needle, this.replacement)
      if (swapped !== null) return swapped
    }
    const chunk = JSON.parse(data) as ChatCompletionChunk
    // The upstream may answer with a more specific model than requested: learn its exact spelling.
    if (typeof chunk.model === 'string') this.needle = modelField(chunk.model)
    return this.objectJson(chunk)
  }
}

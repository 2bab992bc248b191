import type { ChatCompletionChunk, RawChunk, StreamChunk, Usage } from './types'

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
    this.replacement = `"model":${JSON.stringify(alias)}`
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
      const at = data.indexOf(this.needle)
      if (at !== -1) return data.slice(0, at) + this.replacement + data.slice(at + this.needle.length)
    }
    const chunk = JSON.parse(data) as ChatCompletionChunk
    // The upstream may answer with a more specific model than requested: learn its exact spelling.
    if (typeof chunk.model === 'string') this.needle = `"model":${JSON.stringify(chunk.model)}`
    return this.objectJson(chunk)
  }
}

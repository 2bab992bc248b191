import type { ChatCompletion, ChatCompletionChunk, RawChunk, StreamChunk, Usage } from './types'

const MODEL_KEY = '"model"'
const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13

/**
 * JSON text with the value of its `"model"` key changed from `from` to `to` (both JSON-quoted), or
 * null when no `"model"` key holds that value, or more than one does: then the caller serializes the
 * parsed object instead. Only a key can be followed by a colon (a quote inside a string value is
 * escaped), and whitespace around the colon is allowed: Python's json.dumps writes `"model": "x"`.
 */
export function swapQuotedModel(json: string, from: string, to: string): string | null {
  let found = -1
  for (let at = json.indexOf(MODEL_KEY); at !== -1; at = json.indexOf(MODEL_KEY, at + MODEL_KEY.length)) {
    let i = at + MODEL_KEY.length
    while (isSpace(json.charCodeAt(i))) i++
    if (json.charCodeAt(i) !== 58) continue
    i++
    while (isSpace(json.charCodeAt(i))) i++
    if (!json.startsWith(from, i)) continue
    if (found !== -1) return null
    found = i
  }
  return found === -1 ? null : json.slice(0, found) + to + json.slice(found + from.length)
}

/** swapQuotedModel for plain model names. */
export const swapModel = (json: string, from: string, to: string): string | null => swapQuotedModel(json, JSON.stringify(from), JSON.stringify(to))

/**
 * A non-streaming completion's body for the caller, with `model` set to the alias. The upstream's own
 * text is relayed when possible (only the model swapped); otherwise the object is serialized.
 */
export function completionJson(completion: ChatCompletion, upstreamText: string | null, alias: string): string {
  if (upstreamText !== null && completion.usage && typeof completion.model === 'string') {
    const swapped = swapModel(upstreamText, completion.model, alias)
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
  /** The upstream's model as it writes it (JSON-quoted), learnt from its first chunk. */
  private upstreamModel: string | null = null
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
    if (this.upstreamModel !== null && !data.includes('"usage":{')) {
      // The fast path: the upstream's model string, found as the upstream wrote it.
      const swapped = swapQuotedModel(data, this.upstreamModel, this.quotedAlias)
      if (swapped !== null) return swapped
    }
    const chunk = JSON.parse(data) as ChatCompletionChunk
    // The upstream may answer with a more specific model than requested: learn its exact spelling.
    if (typeof chunk.model === 'string') this.upstreamModel = JSON.stringify(chunk.model)
    return this.objectJson(chunk)
  }
}

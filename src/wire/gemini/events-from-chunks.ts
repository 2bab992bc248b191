/**
 * Pivot chat.completion.chunk objects as `:streamGenerateContent?alt=sse` chunks: a target that
 * does not speak Gemini, streamed to a Gemini-native caller. Each chunk is a partial
 * GenerateContentResponse; text and thought summaries stream as they arrive; function calls are
 * gathered by their index and go out whole (as Gemini sends them) in the last chunk, with the
 * finish reason, the usage and the sealed reasoning's signature (see answer-from-chat).
 */
import type * as OpenAI from '../pivot/types'
import { type AnswerOptions, finishReasonOf, functionCallPart, sealable, signParts, usageMetadataOf } from './answer-from-chat'
import type * as Gemini from './types'

/** One chunk as SSE text, framed as Google frames it (`\r\n\r\n`). */
export const sseChunk = (chunk: Gemini.GenerateContentResponse | Gemini.ErrorBody): string => `data: ${JSON.stringify(chunk)}\r\n\r\n`

export class EventsFromChunks {
  private readonly calls = new Map<number, { id: string; name: string; args: string }>()
  private finish: string | null = null
  private reasoning = ''
  private readonly blocks: OpenAI.ThinkingBlock[] = []
  /** The usage the chunks reported (the pivot's: what the gateway counts). */
  usage: OpenAI.Usage | null = null

  constructor(
    /** The caller's alias: every chunk's `modelVersion`. */
    private readonly alias: string,
    private readonly options: AnswerOptions,
  ) {}

  private chunk(parts: Gemini.Part[], finishReason?: string): Gemini.GenerateContentResponse {
    const candidate: Gemini.Candidate = { content: { role: 'model', parts }, index: 0 }
    if (finishReason) candidate.finishReason = finishReason
    return { candidates: [candidate], modelVersion: this.alias, responseId: this.options.responseId }
  }

  /** The chunks one pivot chunk makes (none, or one). */
  push(chunk: OpenAI.ChatCompletionChunk): Gemini.GenerateContentResponse[] {
    if (chunk.usage) this.usage = chunk.usage
    const choice = chunk.choices[0]
    if (!choice) return []
    const delta = choice.delta ?? {}
    const parts: Gemini.Part[] = []
    const thought = typeof delta.reasoning_content === 'string' ? delta.reasoning_content : ''
    this.reasoning += thought
    for (const block of delta.thinking_blocks ?? []) {
      this.blocks.push(block)
      // A block whose text did not stream as reasoning_content shows now.
      if (block.type === 'thinking' && thought === '' && this.reasoning === '' && this.options.includeThoughts && block.thinking !== '')
        parts.push({ text: block.thinking, thought: true })
    }
    if (thought !== '' && this.options.includeThoughts) parts.push({ text: thought, thought: true })
    for (const text of [delta.content, delta.refusal]) if (typeof text === 'string' && text !== '') parts.push({ text })
    for (const fragment of delta.tool_calls ?? []) {
      let call = this.calls.get(fragment.index)
      if (!call) this.calls.set(fragment.index, (call = { id: '', name: '', args: '' }))
      if (fragment.id) call.id = fragment.id
      if (fragment.function?.name) call.name += fragment.function.name
      call.args += fragment.function?.arguments ?? ''
    }
    if (choice.finish_reason) this.finish = choice.finish_reason
    return parts.length > 0 ? [this.chunk(parts)] : []
  }

  /** The last chunk, once the upstream's stream has ended: the function calls, the signature, the finish reason and the usage. */
  end(): Gemini.GenerateContentResponse[] {
    const parts: Gemini.Part[] = []
    for (const [, call] of [...this.calls].sort(([a], [b]) => a - b)) parts.push(functionCallPart({ id: call.id, name: call.name, arguments: call.args }))
    const reasoning = sealable({ thinking_blocks: this.blocks, reasoning_content: this.reasoning }, this.options.origin)
    if (reasoning) signParts(parts, this.options.seal(reasoning))
    if (parts.length === 0) parts.push({ text: '' })
    const last = this.chunk(parts, finishReasonOf(this.finish))
    last.usageMetadata = usageMetadataOf(this.usage)
    return [last]
  }
}

/** `:streamGenerateContent?alt=sse` chunks as pivot chat.completion.chunk objects: a Gemini or Vertex AI target's stream. */
import type * as OpenAI from '../pivot/types'
import { type AnswerParts, readParts } from './answer-to-chat'
import { signatureBlock } from './signature'
import type * as Gemini from './types'
import { answerIdOf, finishReason, toUsage } from './usage'

/**
 * Turns Google's stream (each event a partial answer: new parts, the latest usage, the finish reason
 * on the last) into pivot chunks, event by event. Thought summaries stream as `reasoning_content`,
 * text as `content`; each function call (Google sends it whole) is one tool-call chunk with its
 * arguments. The signatures come as `thinking_blocks` just before the finish reason, once every
 * part they belong to has been given. The usage chunk comes last, from `end()`, once the stream
 * has ended: Google repeats the usage on every event, and the last one is exact.
 */
export class ChunksFromGemini {
  private id: string | null = null
  private usage: Gemini.UsageMetadata | undefined
  private readonly read: AnswerParts = { text: '', reasoning: '', toolCalls: [], signatures: [] }
  /** Whether the finish reason (or a blocked prompt) has come: a stream that ends without one was cut. */
  finished = false

  constructor(
    /** The model name the chunks carry. */
    private readonly model: string,
    private readonly created: number,
  ) {}

  private chunk(delta: OpenAI.ChunkDelta, finish: string | null = null): OpenAI.ChatCompletionChunk {
    return {
      id: `chatcmpl-${this.id}`,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    }
  }

  /** The chunks one event makes. Error events are the provider's to handle before this. */
  push(event: Gemini.GenerateContentResponse): OpenAI.ChatCompletionChunk[] {
    const out: OpenAI.ChatCompletionChunk[] = []
    if (this.id === null) {
      this.id = answerIdOf(event)
      out.push(this.chunk({ role: 'assistant', content: '' }))
    }
    if (event.usageMetadata) this.usage = event.usageMetadata
    if (this.finished) return out
    const candidate = event.candidates?.[0]
    if (!candidate) {
      if (event.promptFeedback?.blockReason !== undefined) {
        this.finished = true
        out.push(this.chunk({}, 'content_filter'))
      }
      return out
    }
    const before = { text: this.read.text.length, reasoning: this.read.reasoning.length, calls: this.read.toolCalls.length }
    readParts(candidate.content?.parts ?? [], this.id, this.read)
    const reasoning = this.read.reasoning.slice(before.reasoning)
    if (reasoning !== '') out.push(this.chunk({ reasoning_content: reasoning }))
    const text = this.read.text.slice(before.text)
    if (text !== '') out.push(this.chunk({ content: text }))
    for (const [index, call] of this.read.toolCalls.slice(before.calls).entries()) {
      out.push(this.chunk({ tool_calls: [{ index: before.calls + index, id: call.id, type: 'function', function: call.function }] }))
    }
    if (candidate.finishReason !== undefined) {
      this.finished = true
      if (this.read.signatures.length > 0) {
        out.push(this.chunk({ thinking_blocks: this.read.signatures.map(({ anchor, signature }) => signatureBlock(signature, anchor)) }))
      }
      out.push(this.chunk({}, finishReason(candidate.finishReason, this.read.toolCalls.length > 0)))
    }
    return out
  }

  /** The usage chunk, once the stream has ended. */
  end(): OpenAI.ChatCompletionChunk {
    return {
      id: `chatcmpl-${this.id ?? 'gemini'}`,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [],
      usage: toUsage(this.usage),
    }
  }
}

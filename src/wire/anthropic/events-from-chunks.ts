/** OpenAI chat.completion.chunk objects as Anthropic Messages stream events: an OpenAI-shaped target's stream to an Anthropic caller. */
import { isGatewaySignature } from '../pivot/gateway-signature'
import type * as OpenAI from '../pivot/types'
import { toolInputOf } from './common'
import type * as Anthropic from './types'
import { fromUsage, stopReason } from './usage'

/** One Anthropic stream event as SSE text: `event:` names its type, as Anthropic writes it. */
export const sseEvent = (event: Anthropic.StreamEvent): string => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`

/**
 * Turns OpenAI chunks into Anthropic's event sequence, chunk by chunk: message_start, then one
 * content block at a time (content_block_start, its deltas, content_block_stop), message_delta with
 * the stop reason and usage, message_stop. Reasoning streams as a thinking block and text as a text
 * block, as they arrive. Tool calls are gathered by their `index` and each becomes one tool_use block
 * with its whole input in one input_json_delta once the upstream has finished: OpenAI-compatible
 * upstreams may interleave the fragments of parallel calls, which Anthropic's one-block-at-a-time
 * sequence cannot carry, and no fragment may be lost.
 */
/** How the translated stream is named, sized and signed. */
export interface StreamOptions {
  /** The message's id (`msg_` and the request id); default: `msg_` and the first chunk's id. */
  id?: string
  /** What message_start says of the input: an estimate, as the exact count comes only at the end. */
  inputTokens?: number
  /** Signs thinking made from reasoning, so it can come back (see signature.ts). */
  sign?(thinking: string): string
}

export class EventsFromChunks {
  private started = false
  private index = -1
  private open: 'text' | 'thinking' | null = null
  private readonly calls = new Map<number, { id: string; name: string; args: string }>()
  private finish: string | null = null
  /** The open thinking block's text, while it has no signature: the gateway signs it when the block closes. */
  private unsigned: string | null = null
  /** Whether a text block was written: a signature arriving after it, with no tool call, is left out (see below). */
  private wroteText = false
  /** The usage the chunks reported (OpenAI's shape: what the gateway counts). */
  usage: OpenAI.Usage | null = null

  constructor(
    /** The model name the events carry (the caller's alias). */
    private readonly model: string,
    private readonly options: StreamOptions = {},
  ) {}

  private close(out: Anthropic.StreamEvent[]): void {
    if (this.open === 'thinking' && this.unsigned !== null && this.options.sign) {
      out.push({ type: 'content_block_delta', index: this.index, delta: { type: 'signature_delta', signature: this.options.sign(this.unsigned) } })
    }
    this.unsigned = null
    if (this.open !== null) out.push({ type: 'content_block_stop', index: this.index })
    this.open = null
  }

  /**
   * A gateway-wrapped signature with no thinking, arriving after the answer's text in a turn without
   * tool calls: Gemini signs a text answer on its last part, so a stream gives it last. Anthropic's
   * format has thinking before text, and clients that show the last block (`claude -p`) would show
   * an empty thinking block instead of the answer; Google does not require a text part's signature
   * back (only function calls'), so it is left out here. JSON answers put it first and keep it.
   */
  private lateSignature(block: OpenAI.ThinkingBlock & { type: 'thinking' }): boolean {
    return this.wroteText && this.calls.size === 0 && block.thinking === '' && typeof block.signature === 'string' && isGatewaySignature(block.signature)
  }

  private ensure(kind: 'text' | 'thinking', out: Anthropic.StreamEvent[]): void {
    if (this.open === kind) return
    this.close(out)
    this.index++
    this.open = kind
    const block: Anthropic.ContentBlock = kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' }
    out.push({ type: 'content_block_start', index: this.index, content_block: block })
  }

  /** The events one chunk makes (often one, sometimes none). */
  push(chunk: OpenAI.ChatCompletionChunk): Anthropic.StreamEvent[] {
    const out: Anthropic.StreamEvent[] = []
    if (!this.started) {
      this.started = true
      const message: Anthropic.MessageResponse = {
        id: this.options.id ?? `msg_${chunk.id}`,
        type: 'message',
        role: 'assistant',
        model: this.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: this.options.inputTokens ?? 0, output_tokens: 0 },
      }
      out.push({ type: 'message_start', message })
    }
    if (chunk.usage) this.usage = chunk.usage
    const choice = chunk.choices[0]
    if (!choice) return out
    const delta = choice.delta ?? {}
    if (typeof delta.reasoning_content === 'string' && delta.reasoning_content !== '') {
      this.ensure('thinking', out)
      this.unsigned = (this.unsigned ?? '') + delta.reasoning_content
      out.push({ type: 'content_block_delta', index: this.index, delta: { type: 'thinking_delta', thinking: delta.reasoning_content } })
    }
    for (const block of delta.thinking_blocks ?? []) {
      if (block.type === 'thinking' && this.lateSignature(block)) continue
      if (block.type === 'thinking') {
        // The signature of the reasoning streamed so far (or the whole block, if none was).
        if (this.open !== 'thinking' && block.thinking !== '') {
          this.ensure('thinking', out)
          out.push({ type: 'content_block_delta', index: this.index, delta: { type: 'thinking_delta', thinking: block.thinking } })
        }
        this.ensure('thinking', out)
        if (block.signature) {
          out.push({ type: 'content_block_delta', index: this.index, delta: { type: 'signature_delta', signature: block.signature } })
          this.unsigned = null
        }
        this.close(out)
      } else {
        this.close(out)
        this.index++
        out.push({ type: 'content_block_start', index: this.index, content_block: { type: 'redacted_thinking', data: block.data } })
        out.push({ type: 'content_block_stop', index: this.index })
      }
    }
    for (const text of [delta.content, delta.refusal]) {
      if (typeof text !== 'string' || text === '') continue
      this.ensure('text', out)
      this.wroteText = true
      out.push({ type: 'content_block_delta', index: this.index, delta: { type: 'text_delta', text } })
    }
    for (const fragment of delta.tool_calls ?? []) {
      let call = this.calls.get(fragment.index)
      if (!call) this.calls.set(fragment.index, (call = { id: '', name: '', args: '' }))
      if (fragment.id) call.id = fragment.id
      if (fragment.function?.name) call.name += fragment.function.name
      call.args += fragment.function?.arguments ?? ''
    }
    if (choice.finish_reason) this.finish = choice.finish_reason
    return out
  }

  /** The events that end the message, once the upstream's stream has ended: tool_use blocks, message_delta, message_stop. */
  end(): Anthropic.StreamEvent[] {
    const out: Anthropic.StreamEvent[] = []
    this.close(out)
    for (const [, call] of [...this.calls].sort(([a], [b]) => a - b)) {
      this.index++
      out.push({ type: 'content_block_start', index: this.index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } })
      out.push({ type: 'content_block_delta', index: this.index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(toolInputOf(call.args)) } })
      out.push({ type: 'content_block_stop', index: this.index })
    }
    out.push({ type: 'message_delta', delta: { stop_reason: stopReason(this.finish), stop_sequence: null }, usage: fromUsage(this.usage) })
    out.push({ type: 'message_stop' })
    return out
  }
}

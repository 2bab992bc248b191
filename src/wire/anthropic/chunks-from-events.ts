/** Anthropic Messages stream events as OpenAI chat.completion.chunk objects: an Anthropic target's stream to a chat caller. */
import type * as OpenAI from '../pivot/types'
import { JSON_TOOL, type RequestShape } from './common'
import type * as Anthropic from './types'
import { finishReason, toUsage } from './usage'

type Block =
  | { kind: 'text' | 'other' }
  | { kind: 'tool'; toolIndex: number }
  | { kind: 'json'; partial: string }
  | { kind: 'thinking'; thinking: string; signature: string }
  | { kind: 'redacted'; data: string }

/**
 * Turns an Anthropic event stream into OpenAI chunks, event by event. Tool calls keep their order:
 * each `tool_use` block is the next tool-call `index` (0, 1, ...), whatever its block index, so
 * parallel calls stay apart; its `input_json_delta`s become argument fragments under that index.
 * Thinking streams as `reasoning_content`; each finished thinking block (with its signature) comes
 * once as `thinking_blocks`, so a caller can send it back on the next turn. In JSON mode the JSON
 * tool's input streams as `content`, and text the model wrote before it is dropped.
 */
export class ChunksFromAnthropic {
  private id = 'msg'
  private usage: Partial<Anthropic.Usage> = {}
  private readonly blocks = new Map<number, Block>()
  private toolCalls = 0
  /** JSON mode: text written before the JSON tool began, given out only if the tool never comes. */
  private heldText: string[] | null
  private jsonSeen = false
  /** Whether message_stop has arrived. */
  stopped = false

  constructor(
    private readonly shape: RequestShape,
    /** The model name the chunks carry (the caller's alias). */
    private readonly model: string,
    private readonly created: number,
  ) {
    this.heldText = shape.json ? [] : null
  }

  private chunk(delta: OpenAI.ChunkDelta, finish: string | null = null): OpenAI.ChatCompletionChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    }
  }

  private text(text: string, out: OpenAI.ChatCompletionChunk[]): void {
    if (text === '') return
    if (this.heldText !== null && !this.jsonSeen) this.heldText.push(text)
    else if (this.heldText === null) out.push(this.chunk({ content: text }))
  }

  /** The chunks one event makes (often none). Error events are the caller's to handle before this. */
  push(event: Anthropic.StreamEvent): OpenAI.ChatCompletionChunk[] {
    const out: OpenAI.ChatCompletionChunk[] = []
    switch (event.type) {
      case 'message_start':
        this.id = event.message.id ?? this.id
        this.usage = { ...event.message.usage }
        out.push(this.chunk({ role: 'assistant', content: '' }))
        break
      case 'content_block_start': {
        const block = event.content_block
        if (block.type === 'text') {
          this.blocks.set(event.index, { kind: 'text' })
          this.text(block.text, out)
        } else if (block.type === 'tool_use' && this.shape.json && block.name === JSON_TOOL) {
          this.blocks.set(event.index, { kind: 'json', partial: '' })
          this.jsonSeen = true
        } else if (block.type === 'tool_use') {
          const toolIndex = this.toolCalls++
          this.blocks.set(event.index, { kind: 'tool', toolIndex })
          out.push(this.chunk({ tool_calls: [{ index: toolIndex, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] }))
        } else if (block.type === 'thinking') {
          this.blocks.set(event.index, { kind: 'thinking', thinking: block.thinking ?? '', signature: block.signature ?? '' })
          if (block.thinking) out.push(this.chunk({ reasoning_content: block.thinking }))
        } else if (block.type === 'redacted_thinking') {
          this.blocks.set(event.index, { kind: 'redacted', data: block.data })
        } else {
          this.blocks.set(event.index, { kind: 'other' })
        }
        break
      }
      case 'content_block_delta': {
        const block = this.blocks.get(event.index)
        const delta = event.delta as { type: string; text?: string; partial_json?: string; thinking?: string; signature?: string }
        if (block?.kind === 'text' && delta.type === 'text_delta') this.text(delta.text ?? '', out)
        else if (block?.kind === 'tool' && delta.type === 'input_json_delta') {
          if (delta.partial_json) out.push(this.chunk({ tool_calls: [{ index: block.toolIndex, function: { arguments: delta.partial_json } }] }))
        } else if (block?.kind === 'json' && delta.type === 'input_json_delta') {
          block.partial += delta.partial_json ?? ''
          // A wrapped schema's answer is the `value` inside: given out whole when the block ends.
          if (!this.shape.json?.wrapped && delta.partial_json) out.push(this.chunk({ content: delta.partial_json }))
        } else if (block?.kind === 'thinking' && delta.type === 'thinking_delta') {
          block.thinking += delta.thinking ?? ''
          if (delta.thinking) out.push(this.chunk({ reasoning_content: delta.thinking }))
        } else if (block?.kind === 'thinking' && delta.type === 'signature_delta') {
          block.signature += delta.signature ?? ''
        }
        break
      }
      case 'content_block_stop': {
        const block = this.blocks.get(event.index)
        if (block?.kind === 'thinking') out.push(this.chunk({ thinking_blocks: [{ type: 'thinking', thinking: block.thinking, signature: block.signature }] }))
        else if (block?.kind === 'redacted') out.push(this.chunk({ thinking_blocks: [{ type: 'redacted_thinking', data: block.data }] }))
        else if (block?.kind === 'json' && this.shape.json?.wrapped) {
          const input = JSON.parse(block.partial || '{}') as { value?: unknown }
          out.push(this.chunk({ content: JSON.stringify(input.value) }))
        }
        break
      }
      case 'message_delta':
        Object.assign(this.usage, event.usage)
        if (event.delta.stop_reason) {
          // JSON mode without the JSON tool: the text was the answer after all.
          if (this.heldText !== null && !this.jsonSeen) for (const text of this.heldText) out.push(this.chunk({ content: text }))
          this.heldText = this.heldText && []
          out.push(this.chunk({}, finishReason(event.delta.stop_reason, this.toolCalls > 0)))
        }
        break
      case 'message_stop':
        this.stopped = true
        out.push({ id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage: toUsage(this.usage) })
        break
    }
    return out
  }
}

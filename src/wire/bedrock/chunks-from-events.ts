/** ConverseStream events as OpenAI chat.completion.chunk objects: a Bedrock target's stream, in the pivot. */
import type * as OpenAI from '../pivot/types'
import type * as Bedrock from './types'
import { finishReason, toUsage } from './common'

type Block = { kind: 'tool'; toolIndex: number } | { kind: 'reasoning'; text: string; signature: string; redacted: string | null }

/**
 * Turns ConverseStream events into OpenAI chunks, event by event. Each `toolUse` block is the next
 * tool-call `index` (0, 1, ...), whatever its block index, so parallel calls stay apart; its input
 * fragments become argument fragments under that index. Reasoning streams as `reasoning_content`;
 * each finished reasoning block with its signature (or redacted) comes once as `thinking_blocks`, so
 * a caller can send it back on the next turn. The finish reason comes with messageStop, the usage
 * with the `metadata` event that ends the stream.
 */
export class ChunksFromConverse {
  private readonly blocks = new Map<number, Block>()
  private toolCalls = 0
  /** Whether the `metadata` event (the stream's last) has arrived. */
  ended = false

  constructor(
    private readonly id: string,
    /** The model name the chunks carry (the caller's alias). */
    private readonly model: string,
    private readonly created: number,
  ) {}

  private chunk(delta: OpenAI.ChunkDelta, finish: string | null = null): OpenAI.ChatCompletionChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    }
  }

  private reasoning(index: number): Extract<Block, { kind: 'reasoning' }> {
    let block = this.blocks.get(index)
    if (block?.kind !== 'reasoning') this.blocks.set(index, (block = { kind: 'reasoning', text: '', signature: '', redacted: null }))
    return block
  }

  private delta(event: Bedrock.ContentBlockDeltaEvent, out: OpenAI.ChatCompletionChunk[]): void {
    const { delta, contentBlockIndex: index } = event
    if (typeof delta.text === 'string') {
      if (delta.text !== '') out.push(this.chunk({ content: delta.text }))
    } else if (delta.toolUse) {
      const block = this.blocks.get(index)
      if (block?.kind === 'tool' && delta.toolUse.input)
        out.push(this.chunk({ tool_calls: [{ index: block.toolIndex, function: { arguments: delta.toolUse.input } }] }))
    } else if (delta.reasoningContent) {
      const block = this.reasoning(index)
      const { text, signature, redactedContent } = delta.reasoningContent
      if (text) {
        block.text += text
        out.push(this.chunk({ reasoning_content: text }))
      }
      if (signature) block.signature += signature
      if (redactedContent) block.redacted = (block.redacted ?? '') + redactedContent
    }
  }

  private stop(index: number, out: OpenAI.ChatCompletionChunk[]): void {
    const block = this.blocks.get(index)
    if (block?.kind !== 'reasoning') return
    if (block.redacted !== null) out.push(this.chunk({ thinking_blocks: [{ type: 'redacted_thinking', data: block.redacted }] }))
    else if (block.signature !== '') out.push(this.chunk({ thinking_blocks: [{ type: 'thinking', thinking: block.text, signature: block.signature }] }))
  }

  /** The chunks one event makes (often one, sometimes none). Exceptions in the stream are the caller's to handle before this. */
  push(event: Bedrock.StreamEvent): OpenAI.ChatCompletionChunk[] {
    const out: OpenAI.ChatCompletionChunk[] = []
    switch (event.type) {
      case 'messageStart':
        out.push(this.chunk({ role: 'assistant', content: '' }))
        break
      case 'contentBlockStart': {
        const tool = event.body.start?.toolUse
        if (!tool) break
        const toolIndex = this.toolCalls++
        this.blocks.set(event.body.contentBlockIndex, { kind: 'tool', toolIndex })
        out.push(this.chunk({ tool_calls: [{ index: toolIndex, id: tool.toolUseId, type: 'function', function: { name: tool.name, arguments: '' } }] }))
        break
      }
      case 'contentBlockDelta':
        this.delta(event.body, out)
        break
      case 'contentBlockStop':
        this.stop(event.body.contentBlockIndex, out)
        break
      case 'messageStop':
        out.push(this.chunk({}, finishReason(event.body.stopReason)))
        break
      case 'metadata':
        this.ended = true
        out.push({ id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage: toUsage(event.body.usage) })
        break
    }
    return out
  }
}

import type { ContentBlock, StreamEvent } from '../wire/anthropic/types'
import type { ThreadAnswer } from './threads'

/** Blocks whose `input` arrives as input_json_delta fragments. */
const JSON_INPUT = new Set(['tool_use', 'server_tool_use', 'mcp_tool_use'])

type Block = Record<string, unknown>

/**
 * A streamed Messages answer put back together from its events, so a thread turn that was
 * streamed can be recorded like one answered in JSON. Only an answer that ended (a stop reason, or
 * message_stop) is a turn: a stream that broke before is not recorded.
 */
export class AnswerAssembler {
  private id: string | null = null
  private blocks: Block[] = []
  private readonly inputs = new Map<number, string>()
  private ended = false

  push(event: StreamEvent): void {
    switch (event.type) {
      case 'message_start':
        this.id = event.message.id
        this.blocks = (event.message.content ?? []).map((block) => ({ ...block }))
        return
      case 'content_block_start':
        this.blocks[event.index] = { ...event.content_block }
        return
      case 'content_block_delta':
        this.apply(event.index, event.delta)
        return
      case 'content_block_stop':
        this.finishInput(event.index)
        return
      case 'message_delta':
        if (event.delta.stop_reason != null) this.ended = true
        return
      case 'message_stop':
        this.ended = true
    }
  }

  /** The answer once it ended; null before, or when no message_start came. */
  answer(): ThreadAnswer | null {
    if (!this.ended || this.id === null) return null
    for (const index of this.inputs.keys()) this.finishInput(index)
    return { id: this.id, content: this.blocks.filter((block) => block !== undefined) as unknown as ContentBlock[] }
  }

  private apply(index: number, delta: Record<string, unknown> & { type: string }): void {
    const block = this.blocks[index]
    if (!block) return
    const append = (field: string, text: unknown) => {
      if (typeof text === 'string') block[field] = `${typeof block[field] === 'string' ? block[field] : ''}${text}`
    }
    switch (delta.type) {
      case 'text_delta':
        return append('text', delta.text)
      case 'thinking_delta':
        return append('thinking', delta.thinking)
      case 'signature_delta':
        block.signature = delta.signature
        return
      case 'input_json_delta':
        if (typeof delta.partial_json === 'string') this.inputs.set(index, (this.inputs.get(index) ?? '') + delta.partial_json)
        return
      case 'citations_delta':
        block.citations = [...(Array.isArray(block.citations) ? block.citations : []), delta.citation]
    }
  }

  /** A tool call's input, parsed from its fragments once its block ended; left as started when they do not parse. */
  private finishInput(index: number): void {
    const json = this.inputs.get(index)
    const block = this.blocks[index]
    this.inputs.delete(index)
    if (json === undefined || !block || !JSON_INPUT.has(String(block.type)) || json.trim() === '') return
    try {
      block.input = JSON.parse(json)
    } catch {
      // An upstream's broken fragment: the call keeps the input it started with.
    }
  }
}

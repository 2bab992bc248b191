/** Anthropic Messages stream events <-> OpenAI chat.completion.chunk objects, as pure state machines. */
import type * as OpenAI from '../openai/types'
import { finishReason, fromUsage, JSON_TOOL, type RequestShape, stopReason, toolInputOf, toUsage } from './chat'
import type * as Anthropic from './types'

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
export class EventsFromChunks {
  private started = false
  private index = -1
  private open: 'text' | 'thinking' | null = null
  private readonly calls = new Map<number, { id: string; name: string; args: string }>()
  private finish: string | null = null
  /** The usage the chunks reported (OpenAI's shape: what the gateway counts). */
  usage: OpenAI.Usage | null = null

  constructor(
    /** The model name the events carry (the caller's alias). */
    private readonly model: string,
  ) {}

  private close(out: Anthropic.StreamEvent[]): void {
    if (this.open !== null) out.push({ type: 'content_block_stop', index: this.index })
    this.open = null
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
        id: chunk.id,
        type: 'message',
        role: 'assistant',
        model: this.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 },
      }
      out.push({ type: 'message_start', message })
    }
    if (chunk.usage) this.usage = chunk.usage
    const choice = chunk.choices[0]
    if (!choice) return out
    const delta = choice.delta ?? {}
    if (typeof delta.reasoning_content === 'string' && delta.reasoning_content !== '') {
      this.ensure('thinking', out)
      out.push({ type: 'content_block_delta', index: this.index, delta: { type: 'thinking_delta', thinking: delta.reasoning_content } })
    }
    for (const block of delta.thinking_blocks ?? []) {
      if (block.type === 'thinking') {
        // The signature of the reasoning streamed so far (or the whole block, if none was).
        if (this.open !== 'thinking' && block.thinking !== '') {
          this.ensure('thinking', out)
          out.push({ type: 'content_block_delta', index: this.index, delta: { type: 'thinking_delta', thinking: block.thinking } })
        }
        this.ensure('thinking', out)
        if (block.signature) out.push({ type: 'content_block_delta', index: this.index, delta: { type: 'signature_delta', signature: block.signature } })
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

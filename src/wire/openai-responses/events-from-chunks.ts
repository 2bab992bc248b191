/** Pivot chat.completion.chunk objects as the Responses API's stream events: a translated target's stream to a Responses caller. */
import type * as OpenAI from '../pivot/types'
import {
  type AnswerOptions,
  callItem,
  incompleteReason,
  type ItemIds,
  itemIds,
  namesFor,
  responseShell,
  responseUsage,
  sealable,
  summaryWanted,
} from './common'
import { visibleItems } from './answer-from-chat'
import { callerTool, type ToolNames } from './tools'
import type { OutputItem, OutputMessage, OutputReasoning, Response, ResponsesRequest, StreamEvent, UnnumberedEvent } from './types'

/** One Responses event as SSE text: `event:` names its type, as OpenAI writes it. */
export const sseEvent = (event: StreamEvent): string => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`

interface ReasoningSlot {
  kind: 'reasoning'
  index: number
  id: string
  text: string
  blocks: OpenAI.ThinkingBlock[]
  summaryOpen: boolean
}

interface MessageSlot {
  kind: 'message'
  index: number
  id: string
  parts: OutputMessage['content']
  /** The part deltas go to: the last one, while open. */
  partOpen: boolean
}

interface CallSlot {
  kind: 'call'
  index: number
  n: number
  callId: string
  name: string
  args: string
}

type Slot = ReasoningSlot | MessageSlot | CallSlot

/**
 * Turns pivot chunks into the Responses event sequence, numbered from 0: response.created and
 * response.in_progress, then each output item (output_item.added, its parts and deltas, its .done
 * events, output_item.done), then response.completed (or response.incomplete) with the whole
 * Response and its usage. Reasoning streams as a reasoning item (summary deltas when summaries were
 * asked for; sealed when it closes), text and refusals as one message item, and each tool call as
 * its own function_call item, addressed by output_index, so parallel calls stay apart even when an
 * upstream interleaves their fragments: argument deltas stream as they come and reassemble exactly.
 * Tool calls are closed at the end of the stream; a freeform tool's input comes whole at its close
 * (its fragments are JSON text around it). `fail` ends a broken stream with response.failed.
 */
export class EventsFromChunks {
  private sequence = 0
  private started = false
  private ended = false
  private readonly slots: Slot[] = []
  private reasoning: ReasoningSlot | null = null
  private message: MessageSlot | null = null
  private readonly calls = new Map<number, CallSlot>()
  private readonly counts = { message: 0, reasoning: 0, call: 0 }
  private finish: string | null = null
  private readonly ids: ItemIds
  private readonly names: ToolNames
  private readonly summaries: boolean
  /** The usage the chunks reported (the pivot's shape: what the gateway counts). */
  usage: OpenAI.Usage | null = null
  /** The Response as the terminal event carried it, once the stream ended or failed. */
  response: Response | null = null
  /** The output items with their reasoning sealed, for the conversation store, once the stream ended. */
  history: OutputItem[] = []

  constructor(
    private readonly request: ResponsesRequest,
    private readonly options: AnswerOptions,
  ) {
    this.ids = itemIds(options.id)
    this.names = namesFor(request, options)
    this.summaries = summaryWanted(request)
  }

  /** Numbers an event made for this call alone (numbered in place: no copy of it). */
  private emit(out: StreamEvent[], event: UnnumberedEvent): void {
    ;(event as StreamEvent).sequence_number = this.sequence++
    out.push(event as StreamEvent)
  }

  /** response.created and response.in_progress, once; push, end and fail begin with them when not yet sent. */
  start(): StreamEvent[] {
    const out: StreamEvent[] = []
    if (this.started) return out
    this.started = true
    // One shell for both: events are written out as they are made, and this one is never changed.
    const response = responseShell(this.request, this.options, 'in_progress')
    this.emit(out, { type: 'response.created', response })
    this.emit(out, { type: 'response.in_progress', response })
    return out
  }

  /** The events one chunk makes (often one, sometimes none). */
  push(chunk: OpenAI.ChatCompletionChunk): StreamEvent[] {
    const out = this.start()
    if (this.ended) return out
    if (chunk.usage) this.usage = chunk.usage
    const choice = chunk.choices[0]
    if (!choice) return out
    const delta = choice.delta ?? {}
    if (typeof delta.reasoning_content === 'string' && delta.reasoning_content !== '') this.reasoningText(delta.reasoning_content, out)
    for (const block of delta.thinking_blocks ?? []) this.thinkingBlock(block, out)
    if (typeof delta.content === 'string' && delta.content !== '') this.text('text', delta.content, out)
    if (typeof delta.refusal === 'string' && delta.refusal !== '') this.text('refusal', delta.refusal, out)
    for (const fragment of delta.tool_calls ?? []) this.toolCall(fragment, out)
    if (choice.finish_reason) this.finish = choice.finish_reason
    return out
  }

  // ---------------------------------------------------------------- reasoning

  private openReasoning(out: StreamEvent[]): ReasoningSlot {
    if (this.reasoning) return this.reasoning
    this.closeMessage(out, 'completed')
    const slot: ReasoningSlot = {
      kind: 'reasoning',
      index: this.slots.length,
      id: this.ids.reasoning(this.counts.reasoning++),
      text: '',
      blocks: [],
      summaryOpen: false,
    }
    this.slots.push(slot)
    this.emit(out, { type: 'response.output_item.added', output_index: slot.index, item: { type: 'reasoning', id: slot.id, summary: [] } })
    return (this.reasoning = slot)
  }

  private reasoningText(text: string, out: StreamEvent[]): void {
    const slot = this.openReasoning(out)
    slot.text += text
    if (!this.summaries) return
    const ref = { item_id: slot.id, output_index: slot.index, summary_index: 0 }
    if (!slot.summaryOpen) this.emit(out, { type: 'response.reasoning_summary_part.added', ...ref, part: { type: 'summary_text', text: '' } })
    slot.summaryOpen = true
    this.emit(out, { type: 'response.reasoning_summary_text.delta', ...ref, delta: text })
  }

  /** A finished thinking block with its signature, kept for sealing; its text streamed already, unless none did. */
  private thinkingBlock(block: OpenAI.ThinkingBlock, out: StreamEvent[]): void {
    const slot = this.openReasoning(out)
    if (block.type === 'thinking' && slot.text === '' && block.thinking !== '') this.reasoningText(block.thinking, out)
    slot.blocks.push(block)
  }

  private reasoningItem(slot: ReasoningSlot, sealed: boolean): OutputReasoning {
    const item: OutputReasoning = {
      type: 'reasoning',
      id: slot.id,
      summary: this.summaries && slot.text !== '' ? [{ type: 'summary_text', text: slot.text }] : [],
    }
    const reasoning = sealed ? sealable({ thinking_blocks: slot.blocks, reasoning_content: slot.text }, this.options.origin) : null
    if (reasoning) item.encrypted_content = this.options.seal(reasoning)
    return item
  }

  private closeReasoning(out: StreamEvent[]): void {
    const slot = this.reasoning
    if (!slot) return
    this.reasoning = null
    if (slot.summaryOpen) {
      const ref = { item_id: slot.id, output_index: slot.index, summary_index: 0 }
      this.emit(out, { type: 'response.reasoning_summary_text.done', ...ref, text: slot.text })
      this.emit(out, { type: 'response.reasoning_summary_part.done', ...ref, part: { type: 'summary_text', text: slot.text } })
    }
    const item = this.reasoningItem(slot, true)
    this.history[slot.index] = item
    this.emit(out, { type: 'response.output_item.done', output_index: slot.index, item: visibleItems([item], this.options.includeEncrypted)[0]! })
  }

  // ---------------------------------------------------------------- the message

  private text(kind: 'text' | 'refusal', text: string, out: StreamEvent[]): void {
    this.closeReasoning(out)
    let slot = this.message
    if (!slot) {
      slot = { kind: 'message', index: this.slots.length, id: this.ids.message(this.counts.message++), parts: [], partOpen: false }
      this.slots.push(slot)
      this.message = slot
      this.emit(out, { type: 'response.output_item.added', output_index: slot.index, item: this.messageItem(slot, 'in_progress') })
    }
    const last = slot.parts.at(-1)
    const wanted = kind === 'text' ? 'output_text' : 'refusal'
    if (!slot.partOpen || last?.type !== wanted) {
      this.closePart(slot, out)
      const part: OutputMessage['content'][number] =
        kind === 'text' ? { type: 'output_text', text: '', annotations: [], logprobs: [] } : { type: 'refusal', refusal: '' }
      slot.parts.push(part)
      slot.partOpen = true
      this.emit(out, {
        type: 'response.content_part.added',
        item_id: slot.id,
        output_index: slot.index,
        content_index: slot.parts.length - 1,
        part: { ...part },
      })
    }
    const part = slot.parts.at(-1)!
    if (text === '') return
    // The commonest event of a stream: written out field by field rather than spread from a shared ref.
    const { id: item_id, index: output_index } = slot
    const content_index = slot.parts.length - 1
    if (part.type === 'output_text') {
      part.text += text
      this.emit(out, { type: 'response.output_text.delta', item_id, output_index, content_index, delta: text, logprobs: [] })
    } else {
      part.refusal += text
      this.emit(out, { type: 'response.refusal.delta', item_id, output_index, content_index, delta: text })
    }
  }

  private closePart(slot: MessageSlot, out: StreamEvent[]): void {
    const part = slot.parts.at(-1)
    if (!slot.partOpen || !part) return
    slot.partOpen = false
    const ref = { item_id: slot.id, output_index: slot.index, content_index: slot.parts.length - 1 }
    if (part.type === 'output_text') this.emit(out, { type: 'response.output_text.done', ...ref, text: part.text, logprobs: [] })
    else this.emit(out, { type: 'response.refusal.done', ...ref, refusal: part.refusal })
    this.emit(out, { type: 'response.content_part.done', ...ref, part: { ...part } })
  }

  private messageItem(slot: MessageSlot, status: OutputMessage['status']): OutputMessage {
    return { type: 'message', id: slot.id, status, role: 'assistant', content: slot.parts.map((part) => ({ ...part })) }
  }

  private closeMessage(out: StreamEvent[], status: OutputMessage['status']): void {
    const slot = this.message
    if (!slot) return
    this.message = null
    this.closePart(slot, out)
    const item = this.messageItem(slot, status)
    this.history[slot.index] = item
    this.emit(out, { type: 'response.output_item.done', output_index: slot.index, item })
  }

  // ---------------------------------------------------------------- tool calls

  private toolCall(fragment: OpenAI.ToolCallDelta, out: StreamEvent[]): void {
    let slot = this.calls.get(fragment.index)
    // Some servers number every call 0 and tell them apart by their ids alone.
    if (slot && fragment.id && slot.callId !== this.ids.callId(slot.n) && fragment.id !== slot.callId) slot = undefined
    if (!slot) {
      this.closeReasoning(out)
      this.closeMessage(out, 'completed')
      const n = this.counts.call++
      slot = { kind: 'call', index: this.slots.length, n, callId: fragment.id || this.ids.callId(n), name: '', args: '' }
      slot.name = fragment.function?.name ?? ''
      this.slots.push(slot)
      this.calls.set(fragment.index, slot)
      this.emit(out, { type: 'response.output_item.added', output_index: slot.index, item: this.callItem(slot, 'in_progress') })
    } else if (fragment.function?.name) slot.name += fragment.function.name
    const args = fragment.function?.arguments ?? ''
    if (args === '') return
    slot.args += args
    const item = this.callItem(slot, 'in_progress')
    // A freeform tool's input is the string inside the JSON arguments: given whole when the call closes.
    if (item.type === 'function_call')
      this.emit(out, { type: 'response.function_call_arguments.delta', item_id: item.id, output_index: slot.index, delta: args })
  }

  private callItem(slot: CallSlot, status: 'in_progress' | 'completed'): OutputItem {
    const item = callItem({ id: slot.callId, name: slot.name, arguments: slot.args }, this.names, this.ids, slot.n)
    if (item.type === 'function_call') return { ...item, status }
    return status === 'in_progress' ? { ...item, input: '' } : item
  }

  private closeCall(slot: CallSlot, out: StreamEvent[]): void {
    const item = this.callItem(slot, 'completed')
    const ref = { item_id: item.id, output_index: slot.index }
    if (item.type === 'function_call') {
      this.emit(out, { type: 'response.function_call_arguments.done', ...ref, name: callerTool(slot.name, this.names).name, arguments: item.arguments })
    } else if (item.type === 'custom_tool_call') {
      if (item.input !== '') this.emit(out, { type: 'response.custom_tool_call_input.delta', ...ref, delta: item.input })
      this.emit(out, { type: 'response.custom_tool_call_input.done', ...ref, input: item.input })
    }
    this.history[slot.index] = item
    this.emit(out, { type: 'response.output_item.done', output_index: slot.index, item })
  }

  // ---------------------------------------------------------------- the end

  /**
   * The events that end the stream once the upstream has: every open item closed, then the
   * terminal event, always last (response.completed, or response.incomplete when the answer was
   * cut by max_output_tokens or a content filter), which the exchange sends only once the request
   * is counted.
   */
  end(): StreamEvent[] {
    const out = this.start()
    if (this.ended) return out
    const reason = incompleteReason(this.finish)
    // An answer with nothing in it still says so: an empty message.
    if (this.slots.length === 0) this.text('text', '', out)
    this.closeReasoning(out)
    this.closeMessage(out, reason ? 'incomplete' : 'completed')
    for (const slot of this.slots) if (slot.kind === 'call') this.closeCall(slot, out)
    this.ended = true
    const response = responseShell(this.request, this.options, reason ? 'incomplete' : 'completed')
    if (reason) response.incomplete_details = { reason }
    response.output = visibleItems(this.history, this.options.includeEncrypted)
    response.usage = responseUsage(this.usage)
    this.response = response
    this.emit(out, { type: reason ? 'response.incomplete' : 'response.completed', response })
    return out
  }

  /**
   * A stream the upstream broke: response.failed (status `failed`, `error` set; the items so far,
   * unfinished ones `incomplete`), and never a response.completed after it.
   */
  fail(error: { message: string; type?: string }): StreamEvent[] {
    const out = this.start()
    if (this.ended) return out
    this.ended = true
    const response = responseShell(this.request, this.options, 'failed')
    response.error = { code: error.type === 'rate_limit_error' ? 'rate_limit_exceeded' : 'server_error', message: error.message }
    response.output = visibleItems(
      this.slots.map((slot) => this.history[slot.index] ?? this.unfinished(slot)),
      this.options.includeEncrypted,
    )
    if (this.usage) response.usage = responseUsage(this.usage)
    this.response = response
    this.emit(out, { type: 'response.failed', response })
    return out
  }

  private unfinished(slot: Slot): OutputItem {
    if (slot.kind === 'reasoning') return this.reasoningItem(slot, false)
    if (slot.kind === 'message') return this.messageItem(slot, 'incomplete')
    const item = this.callItem(slot, 'completed')
    return item.type === 'function_call' ? { ...item, status: 'incomplete' } : item
  }
}

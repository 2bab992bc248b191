/**
 * Responses input items as pivot messages. Every assistant-side item between two caller-side items
 * (reasoning, assistant messages, function and custom tool calls) makes ONE assistant message: its
 * text, its reasoning (restored from the sealed `encrypted_content` when it opens) and its tool calls,
 * so parallel calls stay one message with N calls, as chat completions and Anthropic want them. Tool
 * outputs become tool messages matched by `call_id`; system and developer messages stay in place.
 * Assumes chatCannotServe (cannot-serve.ts) found nothing.
 */
import type { SealedReasoning } from '../pivot/sealed-reasoning'
import type * as OpenAI from '../pivot/types'
import { flatName } from './tools'
import type { InputContent, InputItem, MessageItem, ReasoningItem, ResponsesRequest } from './types'

/** Items recording a hosted tool's run on an earlier turn: their effect is in the messages after them. Dropped, named by type. */
export const HOSTED_CALL_ITEMS = new Set([
  'web_search_call',
  'file_search_call',
  'code_interpreter_call',
  'image_generation_call',
  'computer_call',
  'computer_call_output',
  'local_shell_call',
  'local_shell_call_output',
  'shell_call',
  'shell_call_output',
  'apply_patch_call',
  'apply_patch_call_output',
  'mcp_call',
  'mcp_list_tools',
  'mcp_approval_request',
  'mcp_approval_response',
  'tool_search_call',
  'tool_search_output',
])

type Reasoning = Pick<OpenAI.ChatMessage, 'thinking_blocks' | 'reasoning_content'>

/** A message's parts as the pivot's; text stays a plain string when it is all there is (what the simplest servers take). */
function partsOrString(parts: OpenAI.ContentPart[]): string | OpenAI.ContentPart[] {
  if (parts.length === 1 && parts[0]!.type === 'text') return (parts[0] as OpenAI.TextPart).text
  return parts
}

const IMAGE_DETAIL: Record<string, 'auto' | 'low' | 'high'> = { auto: 'auto', low: 'low', high: 'high', original: 'high' }

/** One input part in the pivot; null for what cannot-serve refuses. */
function pivotPart(part: InputContent): OpenAI.ContentPart | null {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: part.text }
    case 'refusal':
      return { type: 'refusal', refusal: part.refusal }
    case 'input_image': {
      if (typeof part.image_url !== 'string') return null
      const detail = part.detail ? IMAGE_DETAIL[part.detail] : undefined
      return { type: 'image_url', image_url: { url: part.image_url, ...(detail ? { detail } : {}) } }
    }
    case 'input_file': {
      if (typeof part.file_data !== 'string') return null
      return { type: 'file', file: { file_data: part.file_data, ...(typeof part.filename === 'string' ? { filename: part.filename } : {}) } }
    }
    case 'input_audio':
      return { type: 'input_audio', input_audio: part.input_audio }
    default:
      return null
  }
}

const pivotParts = (content: string | InputContent[]): OpenAI.ContentPart[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : content.map(pivotPart).filter((p): p is OpenAI.ContentPart => p !== null)

/** A tool output as a tool message's content: its text (tool messages carry text only). */
const toolOutput = (output: string | InputContent[]): string | OpenAI.ContentPart[] =>
  typeof output === 'string' ? output : partsOrString(pivotParts(output).filter((part) => part.type === 'text'))

/** What the pivot makes of a reasoning item: the sealed reasoning when it opens, else its readable text; null when it has neither. */
function reasoningOf(item: ReasoningItem, unseal: (token: string) => SealedReasoning | null, dropped: Set<string>): Reasoning | null {
  if (typeof item.encrypted_content === 'string' && item.encrypted_content !== '') {
    const sealed = unseal(item.encrypted_content)
    if (sealed) {
      const out: Reasoning = {}
      if (sealed.thinking_blocks && sealed.thinking_blocks.length > 0) out.thinking_blocks = sealed.thinking_blocks
      if (sealed.reasoning_content) out.reasoning_content = sealed.reasoning_content
      if (out.thinking_blocks || out.reasoning_content) return out
    } else dropped.add('reasoning.encrypted_content')
  }
  const text = [...(item.summary ?? []), ...(item.content ?? [])]
    .map((part) => part.text)
    .filter((t) => typeof t === 'string' && t !== '')
    .join('\n\n')
  return text === '' ? null : { reasoning_content: text }
}

/** Several reasoning items of one turn make one message's reasoning, in order. */
function addReasoning(target: Reasoning, reasoning: Reasoning): void {
  if (reasoning.thinking_blocks) target.thinking_blocks = [...(target.thinking_blocks ?? []), ...reasoning.thinking_blocks]
  if (reasoning.reasoning_content) target.reasoning_content = (target.reasoning_content ? `${target.reasoning_content}\n\n` : '') + reasoning.reasoning_content
}

/** Builds the message list item by item. */
class Messages {
  readonly out: OpenAI.ChatMessage[] = []
  readonly dropped = new Set<string>()
  /** The assistant turn being put together, and its content parts. */
  private open: { message: OpenAI.ChatMessage; parts: OpenAI.ContentPart[] } | null = null
  /** Reasoning that came before any other item of its turn. */
  private pending: Reasoning | null = null

  constructor(private readonly unseal: (token: string) => SealedReasoning | null) {}

  private assistant(): { message: OpenAI.ChatMessage; parts: OpenAI.ContentPart[] } {
    if (this.open) return this.open
    const message: OpenAI.ChatMessage = { role: 'assistant', content: null }
    if (this.pending) addReasoning(message, this.pending)
    this.pending = null
    this.out.push(message)
    return (this.open = { message, parts: [] })
  }

  /**
   * The assistant turn ends where a caller-side item starts. Reasoning with nothing after it in its
   * turn (an answer cut off while reasoning) has no message to go with: left out, named.
   */
  close(): void {
    const open = this.open
    // An assistant message has content, tool calls or both: an empty one says ''.
    if (open && (open.parts.length > 0 || !open.message.tool_calls)) open.message.content = open.parts.length > 0 ? partsOrString(open.parts) : ''
    this.open = null
    if (this.pending) this.dropped.add('reasoning')
    this.pending = null
  }

  message(item: MessageItem): void {
    if (item.role === 'assistant') {
      if (item.phase != null) this.dropped.add('phase')
      this.assistant().parts.push(...pivotParts(item.content))
      return
    }
    this.close()
    const parts = pivotParts(item.content)
    // System and developer messages alike are system messages; the pivot keeps them where they are.
    if (item.role === 'system' || item.role === 'developer') this.out.push({ role: 'system', content: partsOrString(parts.filter((p) => p.type === 'text')) })
    else this.out.push({ role: 'user', content: partsOrString(parts) })
  }

  call(id: string, name: string, args: string): void {
    const { message } = this.assistant()
    message.tool_calls = [...(message.tool_calls ?? []), { id, type: 'function', function: { name, arguments: args } }]
  }

  toolResult(callId: string, output: string | InputContent[]): void {
    this.close()
    this.out.push({ role: 'tool', tool_call_id: callId, content: toolOutput(output) })
  }

  reasoning(item: ReasoningItem): void {
    const reasoning = reasoningOf(item, this.unseal, this.dropped)
    if (reasoning) addReasoning(this.open ? this.open.message : (this.pending ??= {}), reasoning)
  }
}

/** The request's input as items: a string is one user message. */
export const inputItems = (input: ResponsesRequest['input']): InputItem[] =>
  typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : (input ?? [])

/** Input items (a rebuilt conversation's, then the request's) as pivot messages, and what was left out of them. */
export function toMessages(
  items: readonly InputItem[],
  unseal: (token: string) => SealedReasoning | null,
): { messages: OpenAI.ChatMessage[]; dropped: string[] } {
  const messages = new Messages(unseal)
  for (const item of items) {
    switch (item.type) {
      case undefined:
      case 'message':
        messages.message(item)
        break
      case 'function_call':
        messages.call(item.call_id, flatName(item.namespace, item.name), item.arguments ?? '')
        break
      case 'custom_tool_call':
        messages.call(item.call_id, flatName(item.namespace, item.name), JSON.stringify({ input: item.input ?? '' }))
        break
      case 'function_call_output':
      case 'custom_tool_call_output':
        messages.toolResult(item.call_id, item.output)
        break
      case 'reasoning':
        messages.reasoning(item)
        break
      case 'additional_tools':
        // Its tools join the request's (tools.ts); the conversation itself is unchanged.
        break
      default: {
        const type = (item as { type: string }).type
        if (HOSTED_CALL_ITEMS.has(type)) messages.dropped.add(type)
      }
    }
  }
  messages.close()
  return { messages: messages.out, dropped: [...messages.dropped] }
}

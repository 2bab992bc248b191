/** A Messages request as an OpenAI chat request: for OpenAI-shaped targets of Anthropic callers. */
import type * as OpenAI from '../pivot/types'
import { BILLING_HEADER } from './common'
import { effortOf } from './effort'
import type * as Anthropic from './types'

/** How the target takes what has no exact OpenAI form. */
export interface ToChatOptions {
  /** The target's highest reasoning effort (`max_reasoning_effort`). */
  maxEffort: string
  /** A system message after the start of the conversation: kept in place, a user reminder, or folded into the first. */
  midSystem: 'keep' | 'as_user' | 'fold'
  /** Whether thinking carries this gateway's signature: only such thinking goes back as reasoning. */
  verifyThinking(thinking: string, signature: string): boolean
  /**
   * Whether the target reads signed thinking with this signature as it is (Claude on Vertex AI
   * Anthropic's own, a Gemini target the Gemini signatures the gateway wrapped): such blocks go
   * on as the pivot's `thinking_blocks`. Absent: none.
   */
  keepThinking?(signature: string): boolean
}

/** A target with no settings of its own: efforts up to high, system messages kept in place, no signed thinking. */
const DEFAULT_OPTIONS: ToChatOptions = { maxEffort: 'high', midSystem: 'keep', verifyThinking: () => false }

/** An Anthropic image block as OpenAI's image_url (a data URL for base64 data). */
const imageUrlOf = (source: Anthropic.ImageSource): string => (source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url)

/** An Anthropic content block as an OpenAI part; cache_control is a caching hint OpenAI has no field for: not sent. */
function blockPart(block: Anthropic.ContentBlock): OpenAI.ContentPart | null {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text }
    case 'image':
      return { type: 'image_url', image_url: { url: imageUrlOf(block.source) } }
    case 'document':
      if (block.source.type === 'text') return { type: 'text', text: block.source.data }
      if (block.source.type === 'base64')
        return { type: 'file', file: { file_data: `data:application/pdf;base64,${block.source.data}`, filename: block.title ?? 'document.pdf' } }
      return null
    default:
      return null
  }
}

/** Parts, or a plain string when they are a single text (what the simplest OpenAI-compatible servers take). */
function partsOrString(parts: OpenAI.ContentPart[]): string | OpenAI.ContentPart[] {
  return parts.length === 1 && parts[0]!.type === 'text' ? (parts[0] as OpenAI.TextPart).text : parts
}

/** A tool result's text: its text blocks, and a tool search's `tool_reference` blocks as a line naming the tool. */
function toolResultText(content: Anthropic.ToolResultBlock['content']): string {
  if (typeof content === 'string') return content
  const lines: string[] = []
  for (const block of (content ?? []) as { type: string; text?: unknown; tool_name?: unknown; name?: unknown }[]) {
    if (block.type === 'text' && typeof block.text === 'string') lines.push(block.text)
    else if (block.type === 'tool_reference') lines.push(`The tool "${String(block.tool_name ?? block.name)}" is now available.`)
  }
  return lines.join('\n')
}

function toolResultMessage(block: Anthropic.ToolResultBlock): OpenAI.ChatMessage {
  const text = toolResultText(block.content)
  // OpenAI tool messages have no error flag: the content says so instead.
  return { role: 'tool', tool_call_id: block.tool_use_id, content: block.is_error ? `Error: ${text}` : text }
}

/** A system prompt as OpenAI content (a string, or its text blocks as parts), Claude Code's attribution block left out; null when empty. */
function systemContent(system: string | Anthropic.TextBlock[] | Anthropic.ContentBlock[] | undefined): string | OpenAI.ContentPart[] | null {
  if (typeof system === 'string') return system === '' ? null : system
  const parts: OpenAI.ContentPart[] = []
  for (const block of system ?? []) if (block.type === 'text' && !block.text.startsWith(BILLING_HEADER)) parts.push({ type: 'text', text: block.text })
  return parts.length === 0 ? null : partsOrString(parts)
}

const textOf = (content: string | OpenAI.ContentPart[]): string =>
  typeof content === 'string' ? content : content.map((part) => (part as OpenAI.TextPart).text).join('\n')

/**
 * An assistant turn: its text, its tool_use blocks as tool calls, and thinking this gateway signed
 * (made from an OpenAI-shaped target's reasoning) as that reasoning again. Other thinking is not
 * sent: OpenAI-compatible models cannot read another model's signed reasoning.
 */
function assistantMessage(blocks: Anthropic.ContentBlock[], options: ToChatOptions): OpenAI.ChatMessage {
  const text = blocks.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('')
  const calls: OpenAI.ToolCall[] = blocks.flatMap((b) =>
    b.type === 'tool_use' ? [{ id: b.id, type: 'function' as const, function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } }] : [],
  )
  const reasoning = blocks.flatMap((b) => (b.type === 'thinking' && options.verifyThinking(b.thinking, b.signature) ? [b.thinking] : [])).join('')
  const assistant: OpenAI.ChatMessage = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text }
  if (calls.length > 0) assistant.tool_calls = calls
  if (reasoning !== '') assistant.reasoning_content = reasoning
  const kept = options.keepThinking
    ? blocks.flatMap((b): OpenAI.ThinkingBlock[] =>
        b.type === 'thinking' && options.keepThinking!(b.signature)
          ? [{ type: 'thinking', thinking: b.thinking, signature: b.signature }]
          : b.type === 'redacted_thinking' && options.keepThinking!('')
            ? [{ type: 'redacted_thinking', data: b.data }]
            : [],
      )
    : []
  if (kept.length > 0) assistant.thinking_blocks = kept
  return assistant
}

/**
 * Anthropic turns as OpenAI messages: `system` first; a user turn's tool results become `tool`
 * messages (in order, before the rest of that turn); an assistant turn's tool_use blocks become
 * `tool_calls`; a `system` message keeps its place, or goes where the target's `mid_system` says.
 */
function toMessages(request: Anthropic.MessagesRequest, options: ToChatOptions): OpenAI.ChatMessage[] {
  const out: OpenAI.ChatMessage[] = []
  let leading: OpenAI.ChatMessage | null = null
  const system = systemContent(request.system)
  if (system !== null) out.push((leading = { role: 'system', content: system }))
  let started = false
  for (const message of request.messages) {
    const blocks: Anthropic.ContentBlock[] = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content
    if (message.role === 'system') {
      const content = systemContent(blocks)
      if (content === null) continue
      if (!started || options.midSystem === 'keep') out.push({ role: 'system', content })
      else if (options.midSystem === 'as_user') out.push({ role: 'user', content: `<system-reminder>\n${textOf(content)}\n</system-reminder>` })
      else if (leading) leading.content = `${textOf(leading.content as string | OpenAI.ContentPart[])}\n\n${textOf(content)}`
      else out.unshift((leading = { role: 'system', content }))
      continue
    }
    started = true
    if (message.role === 'assistant') {
      out.push(assistantMessage(blocks, options))
      continue
    }
    for (const block of blocks) if (block.type === 'tool_result') out.push(toolResultMessage(block))
    const parts = blocks.map(blockPart).filter((p): p is OpenAI.ContentPart => p !== null)
    if (parts.length > 0) out.push({ role: 'user', content: partsOrString(parts) })
  }
  return out
}

const fromToolChoice = (choice: Anthropic.ToolChoice): OpenAI.ToolChoice =>
  choice.type === 'auto' ? 'auto' : choice.type === 'any' ? 'required' : choice.type === 'none' ? 'none' : { type: 'function', function: { name: choice.name } }

/** Tools as OpenAI function tools; `defer_loading` (tools found by a tool search) is a hint: they are declared like any other. */
function toTools(request: Anthropic.MessagesRequest, out: OpenAI.ChatRequest): void {
  if (!request.tools || request.tools.length === 0) return
  out.tools = request.tools.map((tool) => ({
    type: 'function' as const,
    function: { name: tool.name, ...(tool.description ? { description: tool.description } : {}), parameters: tool.input_schema },
  }))
  if (request.tool_choice) {
    out.tool_choice = fromToolChoice(request.tool_choice)
    if ('disable_parallel_tool_use' in request.tool_choice && request.tool_choice.disable_parallel_tool_use) out.parallel_tool_calls = false
  }
}

/** `output_config.format` (a JSON schema the answer must follow) as OpenAI's strict structured output. */
function responseFormat(request: Anthropic.MessagesRequest): OpenAI.ResponseFormat | undefined {
  const format = (request.output_config as { format?: { type?: unknown; schema?: unknown } } | undefined)?.format
  if (format?.type !== 'json_schema' || typeof format.schema !== 'object' || format.schema === null) return undefined
  return { type: 'json_schema', json_schema: { name: 'response', schema: format.schema as Record<string, unknown>, strict: true } }
}

/**
 * A Messages request as an OpenAI chat request for `model`: the inverse of toMessagesRequest.
 * Assumes openaiCannotServe found nothing.
 */
export function fromMessagesRequest(request: Anthropic.MessagesRequest, model: string, given: Partial<ToChatOptions> = {}): OpenAI.ChatRequest {
  const options = { ...DEFAULT_OPTIONS, ...given }
  const out: OpenAI.ChatRequest = { model, messages: toMessages(request, options), max_completion_tokens: request.max_tokens }
  if (typeof request.temperature === 'number') out.temperature = request.temperature
  if (typeof request.top_p === 'number') out.top_p = request.top_p
  if (request.stop_sequences && request.stop_sequences.length > 0) out.stop = request.stop_sequences
  if (typeof request.metadata?.user_id === 'string') out.user = request.metadata.user_id
  toTools(request, out)
  const format = responseFormat(request)
  if (format) out.response_format = format
  const effort = effortOf(request, options.maxEffort)
  if (effort !== undefined) out.reasoning_effort = effort
  if (request.stream === true) out.stream = true
  return out
}

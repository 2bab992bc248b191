/** A Messages request as an OpenAI chat request: for OpenAI-shaped targets of Anthropic callers. */
import type * as OpenAI from '../openai/types'
import type * as Anthropic from './types'

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

function toolResultMessage(block: Anthropic.ToolResultBlock): OpenAI.ChatMessage {
  const text = typeof block.content === 'string' ? block.content : (block.content ?? []).map((b) => (b.type === 'text' ? b.text : '')).join('\n')
  // OpenAI tool messages have no error flag: the content says so instead.
  return { role: 'tool', tool_call_id: block.tool_use_id, content: block.is_error ? `Error: ${text}` : text }
}

/**
 * Anthropic turns as OpenAI messages: `system` first; a user turn's tool results become `tool`
 * messages (in order, before the rest of that turn); an assistant turn's tool_use blocks become
 * `tool_calls`. Thinking blocks from earlier turns are not sent: OpenAI-compatible models cannot
 * read another model's signed reasoning.
 */
function toMessages(request: Anthropic.MessagesRequest): OpenAI.ChatMessage[] {
  const out: OpenAI.ChatMessage[] = []
  if (typeof request.system === 'string') {
    if (request.system !== '') out.push({ role: 'system', content: request.system })
  } else if (Array.isArray(request.system) && request.system.length > 0) {
    out.push({ role: 'system', content: partsOrString(request.system.map((b) => ({ type: 'text', text: b.text }))) })
  }
  for (const message of request.messages) {
    const blocks: Anthropic.ContentBlock[] = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content
    if (message.role === 'user') {
      for (const block of blocks) if (block.type === 'tool_result') out.push(toolResultMessage(block))
      const parts = blocks.map(blockPart).filter((p): p is OpenAI.ContentPart => p !== null)
      if (parts.length > 0) out.push({ role: 'user', content: partsOrString(parts) })
      continue
    }
    const text = blocks.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('')
    const calls: OpenAI.ToolCall[] = blocks.flatMap((b) =>
      b.type === 'tool_use' ? [{ id: b.id, type: 'function' as const, function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } }] : [],
    )
    const assistant: OpenAI.ChatMessage = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text }
    if (calls.length > 0) assistant.tool_calls = calls
    out.push(assistant)
  }
  return out
}

const fromToolChoice = (choice: Anthropic.ToolChoice): OpenAI.ToolChoice =>
  choice.type === 'auto' ? 'auto' : choice.type === 'any' ? 'required' : choice.type === 'none' ? 'none' : { type: 'function', function: { name: choice.name } }

/** `reasoning_effort` values from least to most effort. */
const EFFORTS = ['low', 'medium', 'high', 'xhigh']

/** An effort no higher than `max` (the upstream's `max_reasoning_effort`); values outside the scale pass as they are. */
function capEffort(effort: string, max: string): string {
  const at = EFFORTS.indexOf(effort)
  const cap = EFFORTS.indexOf(max)
  return at !== -1 && cap !== -1 && at > cap ? max : effort
}

/**
 * The effort for a thinking budget, monotonic in the budget: up to 1024 tokens low, up to 4096
 * medium, above that high, and above 16384 xhigh, which `capEffort` keeps for upstreams that take it.
 */
export const effortOfBudget = (budget: number, max: string): string =>
  capEffort(budget <= 1024 ? 'low' : budget <= 4096 ? 'medium' : budget <= 16384 ? 'high' : 'xhigh', max)

/**
 * Anthropic's thinking (a budget, or adaptive) or output effort as OpenAI's reasoning_effort, at
 * most `max`. Adaptive thinking without an effort is medium: asked-for thinking is never dropped.
 */
function effortOf(request: Anthropic.MessagesRequest, max: string): string | undefined {
  const effort = (request.output_config as { effort?: unknown } | undefined)?.effort
  if (typeof effort === 'string') return capEffort(effort === 'max' ? 'xhigh' : effort, max)
  const thinking = request.thinking as { type?: string; budget_tokens?: number } | undefined
  if (thinking?.type === 'adaptive') return 'medium'
  if (thinking?.type !== 'enabled' || typeof thinking.budget_tokens !== 'number') return undefined
  return effortOfBudget(thinking.budget_tokens, max)
}

/**
 * A Messages request as an OpenAI chat request for `model`: the inverse of toMessagesRequest.
 * Assumes openaiCannotServe found nothing. `maxEffort` is the target's highest reasoning effort.
 */
export function fromMessagesRequest(request: Anthropic.MessagesRequest, model: string, maxEffort = 'high'): OpenAI.ChatRequest {
  const out: OpenAI.ChatRequest = { model, messages: toMessages(request), max_completion_tokens: request.max_tokens }
  if (typeof request.temperature === 'number') out.temperature = request.temperature
  if (typeof request.top_p === 'number') out.top_p = request.top_p
  if (request.stop_sequences && request.stop_sequences.length > 0) out.stop = request.stop_sequences
  if (typeof request.metadata?.user_id === 'string') out.user = request.metadata.user_id
  if (request.tools && request.tools.length > 0) {
    out.tools = request.tools.map((tool) => ({
      type: 'function' as const,
      function: { name: tool.name, ...(tool.description ? { description: tool.description } : {}), parameters: tool.input_schema },
    }))
    if (request.tool_choice) {
      out.tool_choice = fromToolChoice(request.tool_choice)
      if ('disable_parallel_tool_use' in request.tool_choice && request.tool_choice.disable_parallel_tool_use) out.parallel_tool_calls = false
    }
  }
  const effort = effortOf(request, maxEffort)
  if (effort !== undefined) out.reasoning_effort = effort
  if (request.stream === true) out.stream = true
  return out
}

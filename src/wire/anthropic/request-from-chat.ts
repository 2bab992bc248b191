/** An OpenAI chat request as a Messages request: for Anthropic targets of chat callers. */
import { invalidRequest } from '../../errors'
import type * as OpenAI from '../pivot/types'
import type * as Anthropic from './types'
import { DATA_URL, DEFAULT_MAX_TOKENS, JSON_TOOL, type RequestShape, THINKING_BUDGETS } from './common'
import { isGatewaySignature } from '../pivot/gateway-signature'

function imageBlock(url: string): Anthropic.ImageBlock {
  const data = DATA_URL.exec(url)
  return { type: 'image', source: data ? { type: 'base64', media_type: data[1]!.toLowerCase(), data: data[2]! } : { type: 'url', url } }
}

function documentBlock(file: OpenAI.FilePart['file']): Anthropic.DocumentBlock {
  const block: Anthropic.DocumentBlock = {
    type: 'document',
    source: { type: 'base64', media_type: 'application/pdf', data: DATA_URL.exec(file.file_data!)![2]! },
  }
  if (file.filename) block.title = file.filename
  return block
}

/** A part's block; a `cache_control` on the part (as Anthropic-aware OpenAI clients send it) is kept. */
function partBlock(part: OpenAI.ContentPart): Anthropic.ContentBlock | null {
  let block: Anthropic.TextBlock | Anthropic.ImageBlock | Anthropic.DocumentBlock
  if (part.type === 'text') block = { type: 'text', text: (part as OpenAI.TextPart).text }
  else if (part.type === 'refusal') block = { type: 'text', text: (part as OpenAI.RefusalPart).refusal }
  else if (part.type === 'image_url') block = imageBlock((part as OpenAI.ImageUrlPart).image_url.url)
  else if (part.type === 'file') block = documentBlock((part as OpenAI.FilePart).file)
  else return null
  const cache = (part as { cache_control?: unknown }).cache_control
  if (typeof cache === 'object' && cache !== null) block.cache_control = cache as Anthropic.CacheControl
  return block
}

/** Content (a string or parts) as blocks; a string stays one text block, each text part its own block. */
function contentBlocks(content: OpenAI.ChatMessage['content']): Anthropic.ContentBlock[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }]
  if (!Array.isArray(content)) return []
  const blocks: Anthropic.ContentBlock[] = []
  for (const part of content) {
    const block = partBlock(part)
    if (block) blocks.push(block)
  }
  // Anthropic refuses empty text blocks.
  return blocks.filter((block) => block.type !== 'text' || block.text !== '')
}

/** Tool-call arguments as the object Anthropic wants; "" is no arguments. Anything else that is not a JSON object is the caller's error. */
function toolInput(args: string, param: string): Record<string, unknown> {
  if (args.trim() === '') return {}
  let input: unknown
  try {
    input = JSON.parse(args)
  } catch {
    throw invalidRequest(`Invalid request: ${param} is not valid JSON`, { param })
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw invalidRequest(`Invalid request: ${param} must be a JSON object`, { param })
  return input as Record<string, unknown>
}

/** Anthropic tool-use ids are [A-Za-z0-9_-]; ids from other providers are mapped the same way on both sides of a turn. */
const toolUseId = (id: string) => id.replace(/[^A-Za-z0-9_-]/g, '_')

function assistantBlocks(message: OpenAI.ChatMessage, i: number): Anthropic.ContentBlock[] {
  const blocks: Anthropic.ContentBlock[] = []
  // Signed thinking goes back first, unchanged: Anthropic checks it when tools were used. Thinking
  // the gateway signed came from another model: Anthropic would refuse it, so it is not sent.
  for (const block of message.thinking_blocks ?? []) {
    if (block.type === 'redacted_thinking') blocks.push({ type: 'redacted_thinking', data: block.data })
    else if (!isGatewaySignature(block.signature)) blocks.push({ ...block })
  }
  blocks.push(...contentBlocks(message.content))
  for (const [j, call] of (message.tool_calls ?? []).entries()) {
    blocks.push({
      type: 'tool_use',
      id: toolUseId(call.id),
      name: call.function.name,
      input: toolInput(call.function.arguments, `messages.${i}.tool_calls.${j}.function.arguments`),
    })
  }
  if (message.function_call) {
    blocks.push({
      type: 'tool_use',
      id: `fn_${i}`,
      name: message.function_call.name,
      input: toolInput(message.function_call.arguments, `messages.${i}.function_call.arguments`),
    })
  }
  return blocks
}

function toolResult(message: OpenAI.ChatMessage, id: string): Anthropic.ToolResultBlock {
  const content = message.content
  const text = typeof content === 'string' ? content : contentBlocks(content).filter((b): b is Anthropic.TextBlock => b.type === 'text')
  return { type: 'tool_result', tool_use_id: toolUseId(id), content: text }
}

/**
 * OpenAI messages as Anthropic turns: the leading system and developer messages become `system`,
 * later ones stay in place as `system` messages; tool results become `tool_result` blocks in a user
 * turn, and consecutive tool messages, with a user message right after them, share one user turn,
 * tool results first; neighbours of the same role merge, since Anthropic wants user and assistant
 * to alternate.
 */
function toTurns(messages: OpenAI.ChatMessage[]): { system: Anthropic.TextBlock[]; turns: Anthropic.Message[] } {
  const system: Anthropic.TextBlock[] = []
  const turns: Anthropic.Message[] = []
  // Legacy function messages name no call id: each answers the latest function_call.
  let lastFunctionCall = -1
  const push = (role: 'user' | 'assistant', blocks: Anthropic.ContentBlock[]) => {
    const previous = turns.at(-1)
    if (previous?.role === role) (previous.content as Anthropic.ContentBlock[]).push(...blocks)
    else turns.push({ role, content: blocks })
  }
  for (const [i, message] of messages.entries()) {
    switch (message.role) {
      case 'system':
      case 'developer':
        if (turns.length === 0) system.push(...(contentBlocks(message.content) as Anthropic.TextBlock[]))
        else turns.push({ role: 'system', content: contentBlocks(message.content) })
        break
      case 'assistant':
        if (message.function_call) lastFunctionCall = i
        push('assistant', assistantBlocks(message, i))
        break
      case 'tool':
        push('user', [toolResult(message, message.tool_call_id ?? '')])
        break
      case 'function':
        push('user', [toolResult(message, `fn_${lastFunctionCall}`)])
        break
      default:
        push('user', contentBlocks(message.content))
    }
  }
  return { system, turns: turns.filter((turn) => turn.content.length > 0) }
}

function toTools(request: OpenAI.ChatRequest): Anthropic.Tool[] {
  const tools: Anthropic.Tool[] = []
  for (const tool of (request.tools ?? []) as OpenAI.FunctionTool[]) {
    const { name, description, parameters } = tool.function
    tools.push({ name, ...(description ? { description } : {}), input_schema: parameters ?? { type: 'object' } })
  }
  for (const fn of request.functions ?? []) {
    tools.push({ name: fn.name, ...(fn.description ? { description: fn.description } : {}), input_schema: fn.parameters ?? { type: 'object' } })
  }
  return tools
}

function toToolChoice(request: OpenAI.ChatRequest): Anthropic.ToolChoice | undefined {
  const choice = request.tool_choice ?? request.function_call
  if (choice === 'none') return { type: 'none' }
  let out: Exclude<Anthropic.ToolChoice, { type: 'none' }> | undefined
  if (choice === 'auto') out = { type: 'auto' }
  else if (choice === 'required') out = { type: 'any' }
  else if (typeof choice === 'object' && choice !== null) {
    const name = 'function' in choice ? (choice as { function: { name: string } }).function.name : (choice as { name: string }).name
    out = { type: 'tool', name }
  }
  if (request.parallel_tool_calls === false) out = { ...(out ?? { type: 'auto' }), disable_parallel_tool_use: true }
  return out
}

/** The JSON schema the JSON tool takes: Anthropic wants an object at the root, so anything else is wrapped in `value`. */
function jsonToolSchema(format: OpenAI.ResponseFormat): { schema: Record<string, unknown>; wrapped: boolean } {
  const schema = format.type === 'json_schema' ? (format.json_schema.schema ?? { type: 'object' }) : { type: 'object' }
  if (schema.type === 'object') return { schema, wrapped: false }
  return { schema: { type: 'object', properties: { value: schema }, required: ['value'] }, wrapped: true }
}

/**
 * OpenAI's `web_search_options` as Anthropic's web search server tool (docs.anthropic.com, "Web
 * search tool"): the caller's approximate location kept; a search context size has no equivalent.
 */
function webSearchTool(options: unknown): Record<string, unknown> | null {
  if (typeof options !== 'object' || options === null) return null
  const tool: Record<string, unknown> = { type: 'web_search_20250305', name: 'web_search' }
  const location = (options as { user_location?: { approximate?: Record<string, unknown> } & Record<string, unknown> }).user_location
  const place = location?.approximate ?? location
  if (place && typeof place === 'object') {
    const { city, region, country, timezone } = place as Record<string, unknown>
    tool.user_location = {
      type: 'approximate',
      ...(city ? { city } : {}),
      ...(region ? { region } : {}),
      ...(country ? { country } : {}),
      ...(timezone ? { timezone } : {}),
    }
  }
  return tool
}

/**
 * An OpenAI chat request as a Messages request for `model`, with what the answer's translation must
 * know. Assumes anthropicCannotServe found nothing; throws a 400 for history it cannot read (tool
 * arguments that are not a JSON object).
 */
export function toMessagesRequest(request: OpenAI.ChatRequest, model: string): { body: Anthropic.MessagesRequest; shape: RequestShape } {
  const { system, turns } = toTurns(request.messages)
  const budget = typeof request.reasoning_effort === 'string' ? THINKING_BUDGETS.get(request.reasoning_effort) : undefined
  const asked = request.max_completion_tokens ?? request.max_tokens ?? undefined
  const body: Anthropic.MessagesRequest = {
    model,
    messages: turns,
    // With thinking, max_tokens covers the thinking too: it must exceed the budget.
    max_tokens: budget === undefined ? (asked ?? DEFAULT_MAX_TOKENS) : asked === undefined ? budget + DEFAULT_MAX_TOKENS : Math.max(asked, budget + 1024),
  }
  if (system.length > 0) body.system = system
  if (budget !== undefined) {
    body.thinking = { type: 'enabled', budget_tokens: budget }
  } else {
    // Thinking allows neither; without it Anthropic's temperature range is 0..1, OpenAI's 0..2.
    if (typeof request.temperature === 'number') body.temperature = Math.min(request.temperature, 1)
    if (typeof request.top_p === 'number') body.top_p = request.top_p
  }
  if (typeof request.stop === 'string') body.stop_sequences = [request.stop]
  else if (Array.isArray(request.stop)) body.stop_sequences = request.stop
  if (typeof request.user === 'string') body.metadata = { user_id: request.user }

  const tools = toTools(request)
  let toolChoice = tools.length > 0 ? toToolChoice(request) : undefined
  let json: RequestShape['json'] = null
  const format = request.response_format
  if (format && format.type !== 'text') {
    const { schema, wrapped } = jsonToolSchema(format)
    json = { wrapped }
    tools.push({ name: JSON_TOOL, description: 'Give your final answer by calling this tool, with the answer as its input.', input_schema: schema })
    if (tools.length === 1 && budget === undefined) {
      // Nothing else to call and no thinking (which forbids forcing a tool): force it.
      toolChoice = { type: 'tool', name: JSON_TOOL }
    } else {
      toolChoice ??= { type: 'auto' }
      if (toolChoice.type === 'none') toolChoice = { type: 'auto' }
      body.system = [...system, { type: 'text', text: `When you give your final answer, give it by calling the ${JSON_TOOL} tool, never as text.` }]
    }
  }
  const search = webSearchTool(request.web_search_options)
  if (search) tools.push(search as Anthropic.Tool)
  if (tools.length > 0) body.tools = tools
  if (toolChoice) body.tool_choice = toolChoice
  if (request.stream === true) body.stream = true
  return { body, shape: { json } }
}

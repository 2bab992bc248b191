/**
 * OpenAI chat completions <-> Anthropic Messages, as pure functions: one module per wire format,
 * every concept (content, tools, tool choice, reasoning, stop reasons, usage) translated in one
 * place. The table these functions implement is in the README's compatibility section.
 */
import { invalidRequest, type Unsupported } from '../../errors'
import type * as OpenAI from '../openai/types'
import type * as Anthropic from './types'

/** Anthropic requires max_tokens; OpenAI callers usually omit it. */
export const DEFAULT_MAX_TOKENS = 4096

/** The tool through which a JSON answer is asked for (`response_format`); never shown to the caller. */
export const JSON_TOOL = 'chatgate_json_response'

/** Thinking budgets for OpenAI's `reasoning_effort`; `none` and `minimal` mean no thinking. */
export const THINKING_BUDGETS: ReadonlyMap<string, number> = new Map([
  ['low', 1024],
  ['medium', 4096],
  ['high', 16384],
  ['xhigh', 32768],
  ['max', 32768],
])

/** OpenAI fields a Messages request has no room for and that change nothing the caller gets back: dropped. */
const DROPPED_FIELDS = new Set([
  'seed',
  'presence_penalty',
  'frequency_penalty',
  'logit_bias',
  'store',
  'metadata',
  'service_tier',
  'prompt_cache_key',
  'safety_identifier',
  'verbosity',
  'prediction',
])

/** OpenAI fields translated below. */
const TRANSLATED_FIELDS = new Set([
  'model',
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'stop',
  'user',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'reasoning_effort',
  'stream',
  'stream_options',
  'functions',
  'function_call',
])

/** Fields that are fine at their neutral value and cannot be served otherwise. */
const NEUTRAL = new Map<string, (value: unknown) => boolean>([
  ['n', (v) => v === 1],
  ['logprobs', (v) => v === false],
  ['top_logprobs', (v) => v === 0],
  ['modalities', (v) => Array.isArray(v) && v.every((m) => m === 'text')],
])

const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp'])
const DATA_URL = /^data:([^;,]+);base64,(.*)$/s
const HTTP_URL = /^https?:\/\//i

const cannot = (code: Unsupported['code'], param: string, message: string): Unsupported => ({ code, param, message })

// ---------------------------------------------------------------- what Anthropic cannot serve

function partProblem(part: OpenAI.ContentPart, param: string, role: OpenAI.Role): Unsupported | null {
  switch (part.type) {
    case 'text':
      return null
    case 'refusal':
      return role === 'assistant' ? null : cannot('unsupported_content', param, `A refusal part belongs to an assistant message (${param})`)
    case 'image_url': {
      if (role !== 'user') break
      const url = (part as OpenAI.ImageUrlPart).image_url.url
      const data = DATA_URL.exec(url)
      if (data ? IMAGE_TYPES.has(data[1]!.toLowerCase()) : HTTP_URL.test(url)) return null
      return cannot('unsupported_content', `${param}.image_url.url`, 'Anthropic takes images as https URLs or base64 data URLs of JPEG, PNG, GIF or WebP')
    }
    case 'file': {
      if (role !== 'user') break
      const file = (part as OpenAI.FilePart).file
      if (typeof file.file_data === 'string' && DATA_URL.exec(file.file_data)?.[1]?.toLowerCase() === 'application/pdf') return null
      return cannot(
        'unsupported_content',
        `${param}.file`,
        'Anthropic takes files as PDF data URLs in file_data (application/pdf); file ids and other types cannot be sent',
      )
    }
    case 'input_audio':
      return cannot('unsupported_content', param, 'Anthropic models take no audio input')
  }
  return cannot('unsupported_content', `${param}.type`, `A "${part.type}" part cannot be sent to Anthropic in a ${role} message`)
}

/**
 * Why Anthropic cannot serve this request without changing what the caller gets back, or null when
 * it can. The caller's alias then tries its next target; with none left, this becomes the 400.
 */
export function anthropicCannotServe(request: OpenAI.ChatRequest): Unsupported | null {
  for (const [field, value] of Object.entries(request)) {
    if (value === null || value === undefined || TRANSLATED_FIELDS.has(field) || DROPPED_FIELDS.has(field)) continue
    if (NEUTRAL.get(field)?.(value)) continue
    return cannot('unsupported_parameter', field, `Anthropic cannot serve "${field}" as sent`)
  }
  for (const [i, message] of request.messages.entries()) {
    if (!Array.isArray(message.content)) continue
    for (const [j, part] of message.content.entries()) {
      const problem = partProblem(part, `messages.${i}.content.${j}`, message.role)
      if (problem) return problem
    }
  }
  for (const [i, tool] of (request.tools ?? []).entries()) {
    if (tool.type !== 'function') return cannot('unsupported_parameter', `tools.${i}.type`, `Anthropic takes function tools only, not "${tool.type}"`)
  }
  const choice = request.tool_choice
  if (typeof choice === 'object' && choice !== null && choice.type !== 'function') {
    return cannot('unsupported_parameter', 'tool_choice', `Anthropic cannot take a tool_choice of type "${choice.type}"`)
  }
  const format = request.response_format
  if (format && !['text', 'json_object', 'json_schema'].includes(format.type)) {
    return cannot('unsupported_parameter', 'response_format.type', `Anthropic cannot take a response_format of type "${format.type}"`)
  }
  const effort = request.reasoning_effort
  if (typeof effort === 'string' && !THINKING_BUDGETS.has(effort) && effort !== 'none' && effort !== 'minimal') {
    return cannot('unsupported_parameter', 'reasoning_effort', `reasoning_effort "${effort}" has no Anthropic equivalent`)
  }
  return null
}

// ---------------------------------------------------------------- request: OpenAI -> Anthropic

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
  // Signed thinking goes back first, unchanged: Anthropic checks it when tools were used.
  for (const block of message.thinking_blocks ?? []) blocks.push(block.type === 'thinking' ? { ...block } : { type: 'redacted_thinking', data: block.data })
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
 * OpenAI messages as Anthropic turns: system and developer messages become `system`; tool results
 * become `tool_result` blocks in a user turn, and consecutive tool messages, with a user message
 * right after them, share one user turn, tool results first; neighbours of the same role merge,
 * since Anthropic wants user and assistant to alternate.
 */
function toTurns(messages: OpenAI.ChatMessage[]): { system: Anthropic.TextBlock[]; turns: Anthropic.Message[] } {
  const system: Anthropic.TextBlock[] = []
  const turns: { role: 'user' | 'assistant'; content: Anthropic.ContentBlock[] }[] = []
  // Legacy function messages name no call id: each answers the latest function_call.
  let lastFunctionCall = -1
  const push = (role: 'user' | 'assistant', blocks: Anthropic.ContentBlock[]) => {
    const previous = turns.at(-1)
    if (previous?.role === role) previous.content.push(...blocks)
    else turns.push({ role, content: blocks })
  }
  for (const [i, message] of messages.entries()) {
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...(contentBlocks(message.content) as Anthropic.TextBlock[]))
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

/** What the answer's translation needs to know about how the request was translated. */
export interface RequestShape {
  /** The answer is wanted as JSON text through JSON_TOOL; `wrapped` when its schema was wrapped in `value`. */
  json: { wrapped: boolean } | null
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
  if (tools.length > 0) body.tools = tools
  if (toolChoice) body.tool_choice = toolChoice
  if (request.stream === true) body.stream = true
  return { body, shape: { json } }
}

// ---------------------------------------------------------------- answer: Anthropic -> OpenAI

const FINISH_REASONS = new Map([
  ['end_turn', 'stop'],
  ['stop_sequence', 'stop'],
  ['max_tokens', 'length'],
  ['model_context_window_exceeded', 'length'],
  ['tool_use', 'tool_calls'],
  ['refusal', 'content_filter'],
  ['pause_turn', 'stop'],
])

/** OpenAI's finish_reason for an Anthropic stop_reason; `tool_use` answered through the JSON tool alone is a plain stop. */
export function finishReason(stopReason: string | null | undefined, calledCallerTools = true): string | null {
  if (!stopReason) return null
  if (stopReason === 'tool_use' && !calledCallerTools) return 'stop'
  return FINISH_REASONS.get(stopReason) ?? 'stop'
}

/** Prompt tokens include cache writes and reads: all of them are input. Cache reads are also `cached_tokens`. */
export function toUsage(usage: Partial<Anthropic.Usage>): OpenAI.Usage {
  const cacheRead = usage.cache_read_input_tokens ?? 0
  const cacheWrite = usage.cache_creation_input_tokens ?? 0
  const prompt = (usage.input_tokens ?? 0) + cacheWrite + cacheRead
  const completion = usage.output_tokens ?? 0
  const out: OpenAI.Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead },
  }
  if (cacheWrite > 0) out.cache_creation_input_tokens = cacheWrite
  return out
}

const jsonAnswer = (input: Record<string, unknown>, shape: RequestShape) => JSON.stringify(shape.json?.wrapped ? input.value : input)

/** An Anthropic message as an OpenAI chat.completion for the caller (`model` is the alias). */
export function toChatCompletion(message: Anthropic.MessageResponse, shape: RequestShape, model: string, created: number): OpenAI.ChatCompletion {
  let text = ''
  let json: string | null = null
  let reasoning = ''
  const toolCalls: OpenAI.ToolCall[] = []
  const thinking: OpenAI.ThinkingBlock[] = []
  for (const block of message.content) {
    if (block.type === 'text') text += block.text
    else if (block.type === 'thinking') {
      reasoning += block.thinking
      thinking.push({ type: 'thinking', thinking: block.thinking, signature: block.signature })
    } else if (block.type === 'redacted_thinking') thinking.push({ type: 'redacted_thinking', data: block.data })
    else if (block.type === 'tool_use') {
      if (shape.json && block.name === JSON_TOOL) json = jsonAnswer(block.input, shape)
      else toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input) } })
    }
  }
  const assistant: OpenAI.AssistantMessage = {
    role: 'assistant',
    // In JSON mode the answer is the tool's input; text around it would make it unparseable.
    content: json ?? (text === '' && toolCalls.length > 0 ? null : text),
    refusal: null,
  }
  if (toolCalls.length > 0) assistant.tool_calls = toolCalls
  if (thinking.length > 0) {
    assistant.reasoning_content = reasoning
    assistant.thinking_blocks = thinking
  }
  return {
    id: message.id,
    object: 'chat.completion',
    created,
    model,
    // A finished message always has a stop reason; should one be missing, the content says what it was.
    choices: [
      {
        index: 0,
        message: assistant,
        logprobs: null,
        finish_reason: finishReason(message.stop_reason ?? (toolCalls.length > 0 ? 'tool_use' : 'end_turn'), toolCalls.length > 0),
      },
    ],
    usage: toUsage(message.usage ?? {}),
  }
}

// ---------------------------------------------------------------- the other way: Anthropic callers, OpenAI-shaped targets

/** Anthropic fields an OpenAI request has no room for and that change nothing the caller gets back: dropped. */
const DROPPED_MESSAGES_FIELDS = new Set(['top_k', 'context_management', 'service_tier'])

/** Anthropic fields translated below. */
const TRANSLATED_MESSAGES_FIELDS = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  'tools',
  'tool_choice',
  'stop_sequences',
  'temperature',
  'top_p',
  'metadata',
  'thinking',
  'stream',
  'output_config',
])

const BLOCK_TYPES_BY_ROLE: Readonly<Record<'user' | 'assistant', ReadonlySet<string>>> = {
  user: new Set(['text', 'image', 'document', 'tool_result']),
  assistant: new Set(['text', 'tool_use', 'thinking', 'redacted_thinking']),
}

function blockProblem(
  block: { type?: unknown; source?: { type?: unknown; media_type?: unknown } },
  param: string,
  role: 'user' | 'assistant',
): Unsupported | null {
  const type = typeof block.type === 'string' ? block.type : ''
  if (!BLOCK_TYPES_BY_ROLE[role].has(type))
    return cannot('unsupported_content', `${param}.type`, `A "${type}" block cannot be sent to an OpenAI-compatible upstream`)
  if (type === 'image' && block.source?.type !== 'base64' && block.source?.type !== 'url') {
    return cannot('unsupported_content', `${param}.source`, 'OpenAI-compatible upstreams take images as base64 data or URLs')
  }
  if (type === 'document' && !(block.source?.type === 'base64' && block.source.media_type === 'application/pdf') && block.source?.type !== 'text') {
    return cannot('unsupported_content', `${param}.source`, 'OpenAI-compatible upstreams take documents as base64 PDFs or plain text')
  }
  return null
}

/**
 * Why an OpenAI-compatible target cannot serve this Messages request without changing what the
 * caller gets back, or null when it can: server tools, MCP servers, document URLs and the like.
 */
export function openaiCannotServe(request: Anthropic.MessagesRequest): Unsupported | null {
  for (const [field, value] of Object.entries(request)) {
    if (value === null || value === undefined || TRANSLATED_MESSAGES_FIELDS.has(field) || DROPPED_MESSAGES_FIELDS.has(field)) continue
    return cannot('unsupported_parameter', field, `An OpenAI-compatible upstream cannot serve "${field}" as sent`)
  }
  const format = (request.output_config as { format?: unknown } | undefined)?.format
  if (format !== undefined)
    return cannot('unsupported_parameter', 'output_config.format', 'Structured output is not translated for OpenAI-compatible upstreams')
  for (const [i, message] of request.messages.entries()) {
    if (!Array.isArray(message.content)) continue
    for (const [j, block] of message.content.entries()) {
      const problem = blockProblem(block as never, `messages.${i}.content.${j}`, message.role)
      if (problem) return problem
      if (block.type === 'tool_result' && Array.isArray(block.content)) {
        for (const [k, inner] of block.content.entries()) {
          if (inner.type !== 'text') return cannot('unsupported_content', `messages.${i}.content.${j}.content.${k}`, 'OpenAI tool results carry text only')
        }
      }
    }
  }
  for (const [i, tool] of (request.tools ?? []).entries()) {
    const type = (tool as { type?: unknown }).type
    if (type !== undefined && type !== 'custom')
      return cannot('unsupported_parameter', `tools.${i}.type`, `Anthropic's server tool "${String(type)}" has no OpenAI equivalent`)
  }
  return null
}

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

/** Anthropic's stop_reason for an OpenAI finish_reason (the inverse of FINISH_REASONS). */
export function stopReason(finish: string | null | undefined): string {
  switch (finish) {
    case 'length':
      return 'max_tokens'
    case 'tool_calls':
    case 'function_call':
      return 'tool_use'
    case 'content_filter':
      return 'refusal'
    default:
      return 'end_turn'
  }
}

/** OpenAI usage as Anthropic's: input excludes what was read from or written to the cache. */
export function fromUsage(usage: OpenAI.Usage | null | undefined): Anthropic.Usage {
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0
  const written = typeof usage?.cache_creation_input_tokens === 'number' ? usage.cache_creation_input_tokens : 0
  return {
    input_tokens: Math.max(0, (usage?.prompt_tokens ?? 0) - cached - written),
    output_tokens: usage?.completion_tokens ?? 0,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: cached,
  }
}

/** Tool arguments as Anthropic's `input`; text that is not a JSON object is kept, not dropped, under `_raw_arguments`. */
export function toolInputOf(args: string): Record<string, unknown> {
  if (args.trim() === '') return {}
  try {
    const input = JSON.parse(args) as unknown
    if (typeof input === 'object' && input !== null && !Array.isArray(input)) return input as Record<string, unknown>
  } catch {}
  return { _raw_arguments: args }
}

/** An OpenAI chat.completion as an Anthropic message for the caller (`model` is the alias): the inverse of toChatCompletion. */
export function toMessageResponse(completion: OpenAI.ChatCompletion, model: string): Anthropic.MessageResponse {
  const choice = completion.choices[0]
  const answer = choice?.message
  const content: Anthropic.ContentBlock[] = []
  if (answer?.thinking_blocks && answer.thinking_blocks.length > 0) {
    for (const block of answer.thinking_blocks) content.push(block.type === 'thinking' ? { ...block } : { type: 'redacted_thinking', data: block.data })
  } else if (typeof answer?.reasoning_content === 'string' && answer.reasoning_content !== '') {
    content.push({ type: 'thinking', thinking: answer.reasoning_content, signature: '' })
  }
  const text = typeof answer?.content === 'string' ? answer.content : ''
  if (text !== '') content.push({ type: 'text', text })
  if (typeof answer?.refusal === 'string' && answer.refusal !== '') content.push({ type: 'text', text: answer.refusal })
  for (const call of answer?.tool_calls ?? [])
    content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolInputOf(call.function.arguments) })
  return {
    id: completion.id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason(choice?.finish_reason),
    stop_sequence: null,
    usage: fromUsage(completion.usage),
  }
}

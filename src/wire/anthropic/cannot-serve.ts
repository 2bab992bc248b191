/** What each side cannot carry to the other without changing what the caller gets back: the target is then skipped. */
import type { Unsupported } from '../../errors'
import { CHAT_CORE_FIELDS, CHAT_NEUTRAL_VALUES, droppedFieldsOf, OPENAI_ONLY_HINTS, unservedField } from '../pivot/field-policy'
import type * as OpenAI from '../pivot/types'
import type * as Anthropic from './types'
import { BILLING_HEADER, cannot, DATA_URL, HTTP_URL, IMAGE_TYPES, THINKING_BUDGETS } from './common'

/** OpenAI fields a Messages request has no room for and that change nothing the caller gets back: dropped. */
export const DROPPED_FIELDS = new Set(['seed', 'presence_penalty', 'frequency_penalty', ...OPENAI_ONLY_HINTS])

/** OpenAI fields translated below. */
const TRANSLATED_FIELDS = new Set([...CHAT_CORE_FIELDS, 'user', 'web_search_options'])

const POLICY = { translated: TRANSLATED_FIELDS, dropped: DROPPED_FIELDS, neutral: CHAT_NEUTRAL_VALUES }

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
  const field = unservedField(request, POLICY)
  if (field !== null) return cannot('unsupported_parameter', field, `Anthropic cannot serve "${field}" as sent`)
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

/** Anthropic fields an OpenAI request has no room for and that change nothing the caller gets back: dropped. */
export const DROPPED_MESSAGES_FIELDS = new Set(['top_k', 'context_management', 'service_tier', 'cache_control', 'prompt_cache_key'])

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
  // A message thread is the gateway's to hold for these targets: the history is rebuilt before translation.
  'thread',
])

const BLOCK_TYPES_BY_ROLE: Readonly<Record<'user' | 'assistant' | 'system', ReadonlySet<string>>> = {
  user: new Set(['text', 'image', 'document', 'tool_result']),
  assistant: new Set(['text', 'tool_use', 'thinking', 'redacted_thinking']),
  system: new Set(['text']),
}

/** What a tool result may hold for an OpenAI tool message (text only): text, and a tool search's references to tools. */
const TOOL_RESULT_BLOCK_TYPES = new Set(['text', 'tool_reference'])

function blockProblem(
  block: { type?: unknown; source?: { type?: unknown; media_type?: unknown } },
  param: string,
  role: 'user' | 'assistant' | 'system',
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
  const format = (request.output_config as { format?: { type?: unknown } } | undefined)?.format
  if (format !== undefined && format.type !== 'json_schema')
    return cannot('unsupported_parameter', 'output_config.format.type', 'OpenAI-compatible upstreams take structured output as a JSON schema only')
  for (const [i, message] of request.messages.entries()) {
    if (!Array.isArray(message.content)) continue
    for (const [j, block] of message.content.entries()) {
      const problem = blockProblem(block as never, `messages.${i}.content.${j}`, message.role)
      if (problem) return problem
      if (block.type === 'tool_result' && Array.isArray(block.content)) {
        for (const [k, inner] of block.content.entries()) {
          if (!TOOL_RESULT_BLOCK_TYPES.has(inner.type))
            return cannot('unsupported_content', `messages.${i}.content.${j}.content.${k}`, 'OpenAI tool results carry text only')
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

/** Whether a Messages request carries a cache_control hint anywhere: at the top, on a system block, a message block or a tool. */
function hasCacheControl(request: Anthropic.MessagesRequest): boolean {
  const marked = (block: unknown) => typeof block === 'object' && block !== null && (block as { cache_control?: unknown }).cache_control != null
  if (request.cache_control != null) return true
  if (Array.isArray(request.system) && request.system.some(marked)) return true
  if ((request.tools ?? []).some(marked)) return true
  for (const message of request.messages) {
    if (!Array.isArray(message.content)) continue
    for (const block of message.content) {
      if (marked(block)) return true
      if (block.type === 'tool_result' && Array.isArray(block.content) && block.content.some(marked)) return true
    }
  }
  return false
}

/**
 * The hints of a Messages request an OpenAI-shaped target cannot use, which the translation leaves
 * out: named in the answer's x-svc-dropped header, never dropped silently.
 */
export function droppedFromMessages(request: Anthropic.MessagesRequest): string[] {
  const dropped: string[] = []
  for (const field of DROPPED_MESSAGES_FIELDS) if (field !== 'cache_control' && request[field] != null) dropped.push(field)
  if (hasCacheControl(request)) dropped.push('cache_control')
  const system = request.system
  if (Array.isArray(system) && system.some((block) => block.type === 'text' && block.text.startsWith(BILLING_HEADER)))
    dropped.push('x-anthropic-billing-header')
  return dropped
}

/**
 * The Messages field a field of the translated request came from (request-to-chat.ts): a target that
 * leaves it out is named to a Messages caller by the caller's own name.
 */
export function messagesFieldOf(field: string, request: Anthropic.MessagesRequest): string {
  switch (field) {
    case 'user':
      return 'metadata.user_id'
    case 'stop':
      return 'stop_sequences'
    case 'max_completion_tokens':
      return 'max_tokens'
    case 'parallel_tool_calls':
      return 'tool_choice.disable_parallel_tool_use'
    case 'reasoning_effort':
      return request.thinking ? 'thinking' : 'output_config.effort'
    default:
      return field
  }
}

/** The fields of a chat request Anthropic has no room for, which the translation leaves out: named in x-svc-dropped. */
export const droppedFromChat = (request: OpenAI.ChatRequest): string[] => droppedFieldsOf(request, DROPPED_FIELDS)

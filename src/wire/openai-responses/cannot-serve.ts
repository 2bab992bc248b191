/**
 * What a Responses request asks that cannot be served as asked: refused outright (`background`,
 * `conversation`), refused for translated targets (what the pivot cannot carry: they are skipped, and
 * with none left the caller gets 400), or dropped with its name in x-svc-dropped (hints that change
 * nothing the caller gets back). Hosted tools are the exchange's to decide (hostedToolRefused).
 */
import type { Unsupported } from '../../errors'
import { HOSTED_CALL_ITEMS } from './input-to-messages'
import { pivotTools, type HostedTool, toolSources } from './tools'
import type { InputContent, InputItem, ResponsesRequest, Tool } from './types'

const cannot = (code: Unsupported['code'], param: string, message: string): Unsupported => ({ code, param, message })

/** Fields the translation carries to the pivot (request-to-chat.ts). */
const TRANSLATED_FIELDS = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'text',
  'reasoning',
  'max_output_tokens',
  'temperature',
  'top_p',
  'user',
  'safety_identifier',
  'prompt_cache_key',
  'prompt_cache_retention',
  'service_tier',
  'stream',
])

/** Fields the gateway itself serves, never sent upstream: the Response's metadata, the conversation store, `include`, stream framing. */
const GATEWAY_FIELDS = new Set(['metadata', 'store', 'previous_response_id', 'include', 'stream_options', 'background', 'conversation'])

/**
 * Fields a translated target goes without, named in x-svc-dropped: `truncation: "auto"` (the gateway
 * never truncates; it only matters past the context window), the hosted-tool call cap, server-side
 * compaction settings, cache options, Codex's `client_metadata`.
 */
const DROPPED_FIELDS = new Set(['max_tool_calls', 'context_management', 'prompt_cache_options', 'client_metadata'])

/** Fields that are fine at their neutral value and cannot be served otherwise. */
const NEUTRAL = new Map<string, (value: unknown) => boolean>([
  ['top_logprobs', (v) => v === 0],
  ['truncation', (v) => v === 'auto' || v === 'disabled'],
])

/** `include` values a translated answer cannot carry (the others concern items it never has, or encrypted reasoning it seals). */
const UNSERVED_INCLUDES = new Set(['message.output_text.logprobs'])

/** Refused for every target, native ones included, until the gateway builds them (400 unsupported_parameter naming the field). */
export function gatewayRefuses(request: ResponsesRequest): Unsupported | null {
  if (request.background === true) return cannot('unsupported_parameter', 'background', 'Background responses are not supported by this gateway')
  if (request.conversation != null)
    return cannot('unsupported_parameter', 'conversation', 'Conversations are not supported by this gateway: use previous_response_id')
  return null
}

/** A hosted tool an alias with `hosted_tools = "refuse"` will not drop. */
export const hostedToolRefused = (hosted: HostedTool): Unsupported =>
  cannot('unsupported_parameter', hosted.param, `The hosted tool "${hosted.type}" cannot run on this model's upstream`)

const TEXT_PARTS = new Set(['input_text', 'output_text'])
const PARTS_BY_ROLE: Record<string, ReadonlySet<string>> = {
  user: new Set(['input_text', 'output_text', 'input_image', 'input_file', 'input_audio']),
  system: TEXT_PARTS,
  developer: TEXT_PARTS,
  assistant: new Set(['output_text', 'input_text', 'refusal']),
}

function partProblem(part: InputContent, param: string, allowed: ReadonlySet<string>, where: string): Unsupported | null {
  if (!allowed.has(part.type)) return cannot('unsupported_content', `${param}.type`, `A "${part.type}" part cannot be sent in ${where} to this model`)
  if (part.type === 'input_image' && typeof part.image_url !== 'string')
    return cannot('unsupported_content', `${param}.file_id`, 'Images are taken as URLs or data URLs in image_url; file ids cannot be sent to this model')
  if (part.type === 'input_file' && typeof part.file_data !== 'string')
    return cannot(
      'unsupported_content',
      typeof part.file_url === 'string' ? `${param}.file_url` : `${param}.file_id`,
      'Files are taken as data URLs in file_data only',
    )
  return null
}

function contentProblem(content: unknown, param: string, allowed: ReadonlySet<string>, where: string): Unsupported | null {
  if (typeof content === 'string') return null
  if (!Array.isArray(content)) return cannot('unsupported_content', param, `${param} must be a string or a list of parts`)
  for (const [j, part] of (content as InputContent[]).entries()) {
    const problem = partProblem(part, `${param}.${j}`, allowed, where)
    if (problem) return problem
  }
  return null
}

function itemProblem(item: InputItem, param: string): Unsupported | null {
  switch (item.type) {
    case undefined:
    case 'message': {
      const allowed = PARTS_BY_ROLE[item.role]
      if (!allowed) return cannot('unsupported_content', `${param}.role`, `A message of role "${String(item.role)}" cannot be sent to this model`)
      return contentProblem(item.content, `${param}.content`, allowed, `a ${item.role} message`)
    }
    case 'function_call':
    case 'custom_tool_call':
    case 'function_call_output':
    case 'custom_tool_call_output':
      if (typeof item.call_id !== 'string' || item.call_id === '')
        return cannot('unsupported_content', `${param}.call_id`, 'A tool call and its output are matched by call_id')
      if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output')
        return contentProblem(item.output, `${param}.output`, TEXT_PARTS, 'a tool output (text only)')
      return null
    case 'reasoning':
      return null
    case 'additional_tools':
      return toolsProblem(item.tools ?? [], `${param}.tools`)
    default: {
      const type = (item as { type: unknown }).type
      if (typeof type === 'string' && HOSTED_CALL_ITEMS.has(type)) return null
      return cannot('unsupported_content', `${param}.type`, `An input item of type "${String(type)}" cannot be sent to this model`)
    }
  }
}

/** Members of a namespace are functions and freeform tools; hosted tools are the exchange's to decide on. */
function toolsProblem(tools: Tool[], param: string): Unsupported | null {
  for (const [i, tool] of tools.entries()) {
    if (tool.type !== 'namespace') continue
    for (const [j, member] of ((tool as { tools?: Tool[] }).tools ?? []).entries()) {
      if (member.type !== 'function' && member.type !== 'custom')
        return cannot('unsupported_parameter', `${param}.${i}.tools.${j}.type`, `A namespace holds function and custom tools, not "${member.type}"`)
    }
  }
  return null
}

function fieldsProblem(request: ResponsesRequest): Unsupported | null {
  for (const [field, value] of Object.entries(request)) {
    if (value === null || value === undefined || TRANSLATED_FIELDS.has(field) || GATEWAY_FIELDS.has(field) || DROPPED_FIELDS.has(field)) continue
    if (NEUTRAL.get(field)?.(value)) continue
    return cannot('unsupported_parameter', field, `"${field}" cannot be served by this model's upstream`)
  }
  for (const [i, value] of (request.include ?? []).entries()) {
    if (UNSERVED_INCLUDES.has(value)) return cannot('unsupported_parameter', `include.${i}`, `include "${value}" cannot be served by this model's upstream`)
  }
  const format = request.text?.format
  if (format && !['text', 'json_object', 'json_schema'].includes(format.type))
    return cannot('unsupported_parameter', 'text.format.type', `A text format of type "${format.type}" cannot be served by this model's upstream`)
  const choice = request.tool_choice
  if (typeof choice === 'object' && choice !== null && !['function', 'custom', 'allowed_tools'].includes(choice.type))
    return cannot('unsupported_parameter', 'tool_choice', `A tool_choice of type "${choice.type}" (a hosted tool) cannot be served by this model's upstream`)
  return null
}

/**
 * Why a translated target (chat completions, Anthropic, the mock...) cannot serve this request as
 * asked, or null: input items and parts the pivot has no form for (item references, compaction,
 * file ids, images in tool outputs...), fields it cannot carry. `history` is a rebuilt
 * conversation's items (previous_response_id), named by that field.
 */
export function chatCannotServe(request: ResponsesRequest, history: readonly InputItem[] = []): Unsupported | null {
  const problem = fieldsProblem(request) ?? toolsProblem(request.tools ?? [], 'tools')
  if (problem) return problem
  const input = typeof request.input === 'string' || request.input === undefined ? [] : request.input
  for (const item of history) {
    const inHistory = itemProblem(item, 'previous_response_id')
    if (inHistory) return { ...inHistory, param: 'previous_response_id' }
  }
  for (const [i, item] of input.entries()) {
    const inInput = itemProblem(item, `input.${i}`)
    if (inInput) return inInput
  }
  const { conflict } = pivotTools(toolSources(request.tools, history, input))
  if (conflict) return cannot('unsupported_parameter', conflict.param, `Two different tools would both be called "${conflict.name}" on this model's upstream`)
  return null
}

/** The hints of a Responses request a translated target goes without (request-to-chat.ts adds what it leaves out of the items). */
export function droppedFromResponses(request: ResponsesRequest): string[] {
  const dropped = [...DROPPED_FIELDS].filter((field) => request[field] != null)
  if (request.truncation === 'auto') dropped.push('truncation')
  if (request.reasoning?.context != null) dropped.push('reasoning.context')
  return dropped
}

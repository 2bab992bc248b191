import { invalidRequest } from '../../errors'
import type { ChatRequest } from '../pivot/types'

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function'])

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

const refuse = (param: string, reason: string) => invalidRequest(`Invalid request: ${param} ${reason}`, { param })

/** What a known part type must carry, by field: [name, check, what it must be]. */
const PART_FIELDS = new Map<string, [string, (value: unknown) => boolean, string][]>([
  ['text', [['text', (v) => typeof v === 'string', 'a string']]],
  ['image_url', [['image_url', (v) => isObject(v) && typeof v.url === 'string', 'an object with a string url']]],
  ['input_audio', [['input_audio', (v) => isObject(v) && typeof v.data === 'string' && typeof v.format === 'string', 'an object with string data and format']]],
  ['file', [['file', isObject, 'an object']]],
  ['refusal', [['refusal', (v) => typeof v === 'string', 'a string']]],
])

function checkContent(content: unknown, param: string, nullable: boolean): void {
  if (typeof content === 'string') return
  if (content === null || content === undefined) {
    if (nullable) return
    throw refuse(param, content === null ? 'may be null only on an assistant message (or a legacy function message)' : 'is required')
  }
  if (!Array.isArray(content)) throw refuse(param, 'must be a string or an array of content parts')
  for (const [j, part] of content.entries()) {
    const at = `${param}.${j}`
    if (!isObject(part)) throw refuse(at, 'must be an object with a string "type"')
    if (typeof part.type !== 'string') throw refuse(`${at}.type`, 'must be a string')
    // Parts of other types are not the gateway's to refuse: OpenAI-compatible upstreams get them as sent.
    for (const [field, ok, what] of PART_FIELDS.get(part.type) ?? []) if (!ok(part[field])) throw refuse(`${at}.${field}`, `must be ${what}`)
  }
}

function checkToolCalls(calls: unknown, param: string): void {
  if (calls === undefined || calls === null) return
  if (!Array.isArray(calls)) throw refuse(param, 'must be an array')
  for (const [j, call] of calls.entries()) {
    const at = `${param}.${j}`
    if (!isObject(call)) throw refuse(at, 'must be an object')
    if (typeof call.id !== 'string') throw refuse(`${at}.id`, 'must be a string')
    if (call.type !== 'function') continue
    if (!isObject(call.function)) throw refuse(`${at}.function`, 'must be an object with name and arguments')
    if (typeof call.function.name !== 'string') throw refuse(`${at}.function.name`, 'must be a string')
    if (typeof call.function.arguments !== 'string') throw refuse(`${at}.function.arguments`, 'must be a string (JSON text)')
  }
}

/**
 * The structure of a chat request beyond what its schema says, with `param` naming the exact path
 * (`messages.2.content.1.type`). Only what is structurally wrong is refused: every body OpenAI's
 * published schema accepts passes, and so do parts and fields the gateway does not know.
 */
export function checkChatRequest(request: ChatRequest): void {
  for (const [i, message] of request.messages.entries()) {
    const at = `messages.${i}`
    if (typeof message.role !== 'string' || !ROLES.has(message.role)) throw refuse(`${at}.role`, `must be one of ${[...ROLES].join(', ')}`)
    const assistant = message.role === 'assistant'
    checkContent(message.content, `${at}.content`, assistant || message.role === 'function')
    if (assistant) checkToolCalls(message.tool_calls, `${at}.tool_calls`)
    if (message.role === 'tool' && typeof message.tool_call_id !== 'string') throw refuse(`${at}.tool_call_id`, 'is required and must be a string')
  }
  if (request.tools !== undefined && request.tools !== null) {
    if (!Array.isArray(request.tools)) throw refuse('tools', 'must be an array')
    for (const [i, tool] of (request.tools as unknown[]).entries()) {
      if (!isObject(tool) || typeof tool.type !== 'string') throw refuse(`tools.${i}.type`, 'must be a string')
      if (tool.type !== 'function') continue
      if (!isObject(tool.function) || typeof tool.function.name !== 'string') throw refuse(`tools.${i}.function.name`, 'must be a string')
      if (tool.function.parameters !== undefined && !isObject(tool.function.parameters))
        throw refuse(`tools.${i}.function.parameters`, 'must be an object (a JSON schema)')
    }
  }
}

import { invalidRequest } from '../../errors'
import type { MessagesRequest } from './types'

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const isString = (value: unknown) => typeof value === 'string'

const refuse = (param: string, reason: string) => invalidRequest(`Invalid request: ${param} ${reason}`, { param })

/** What a known block type must carry, by field: [name, check, what it must be]. */
const BLOCK_FIELDS = new Map<string, [string, (value: unknown) => boolean, string][]>([
  ['text', [['text', isString, 'a string']]],
  ['image', [['source', (v) => isObject(v) && isString(v.type), 'an object with a string type']]],
  ['document', [['source', (v) => isObject(v) && isString(v.type), 'an object with a string type']]],
  [
    'tool_use',
    [
      ['id', isString, 'a string'],
      ['name', isString, 'a string'],
      ['input', isObject, 'an object'],
    ],
  ],
  [
    'tool_result',
    [
      ['tool_use_id', isString, 'a string'],
      ['content', (v) => v === undefined || isString(v) || Array.isArray(v), 'a string or an array of blocks'],
    ],
  ],
  [
    'thinking',
    [
      ['thinking', isString, 'a string'],
      ['signature', isString, 'a string'],
    ],
  ],
  ['redacted_thinking', [['data', isString, 'a string']]],
])

function checkBlocks(blocks: unknown, param: string): void {
  if (!Array.isArray(blocks)) throw refuse(param, 'must be a string or an array of content blocks')
  for (const [j, block] of blocks.entries()) {
    const at = `${param}.${j}`
    if (!isObject(block)) throw refuse(at, 'must be an object with a string "type"')
    if (!isString(block.type)) throw refuse(`${at}.type`, 'must be a string')
    // Blocks of other types are not the gateway's to refuse: Anthropic upstreams get them as sent.
    for (const [field, ok, what] of BLOCK_FIELDS.get(block.type as string) ?? []) if (!ok(block[field])) throw refuse(`${at}.${field}`, `must be ${what}`)
  }
}

/**
 * The structure of a Messages request beyond its schema, with `param` naming the exact path
 * (`messages.1.content.0.tool_use_id`). Only what is structurally wrong is refused.
 */
export function checkMessagesRequest(request: MessagesRequest): void {
  const continues = (request.thread as { type?: unknown } | undefined)?.type === 'continue'
  if (request.messages.length === 0 && !continues) throw refuse('messages', 'must be a non-empty array of messages')
  for (const [i, message] of request.messages.entries()) {
    const at = `messages.${i}`
    if (message.role !== 'user' && message.role !== 'assistant' && message.role !== 'system') throw refuse(`${at}.role`, 'must be user, assistant or system')
    if (!isString(message.content)) checkBlocks(message.content, `${at}.content`)
  }
  if (request.system !== undefined && !isString(request.system)) checkBlocks(request.system, 'system')
  for (const [i, tool] of (request.tools ?? []).entries()) {
    if (!isObject(tool) || !isString(tool.name)) throw refuse(`tools.${i}.name`, 'must be a string')
    // Server tools (web search, bash...) carry a type and no input_schema.
    if (tool.type === undefined && !isObject(tool.input_schema)) throw refuse(`tools.${i}.input_schema`, 'must be an object (a JSON schema)')
  }
}

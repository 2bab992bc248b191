/** What a Converse request cannot carry without changing what the caller gets back: the target is then skipped. */
import type { Unsupported } from '../../errors'
import { CHAT_CORE_FIELDS, CHAT_NEUTRAL_VALUES, droppedFieldsOf, OPENAI_ONLY_HINTS, unservedField } from '../pivot/field-policy'
import type * as OpenAI from '../pivot/types'
import { cannot, DATA_URL, DOCUMENT_FORMATS, IMAGE_FORMATS, isClaude, THINKING_BUDGETS } from './common'

/** OpenAI fields Converse has no room for and that change nothing the caller gets back: dropped, and named in x-svc-dropped. */
const DROPPED_FIELDS = new Set(['seed', 'presence_penalty', 'frequency_penalty', ...OPENAI_ONLY_HINTS, 'user'])

/** OpenAI fields request-from-chat.ts translates. */
const TRANSLATED_FIELDS = new Set(CHAT_CORE_FIELDS)

const POLICY = { translated: TRANSLATED_FIELDS, dropped: DROPPED_FIELDS, neutral: CHAT_NEUTRAL_VALUES }

const NO_THINKING = new Set(['none', 'minimal'])

function mediaProblem(part: OpenAI.ContentPart, param: string): Unsupported | null {
  if (part.type === 'image_url') {
    const data = DATA_URL.exec((part as OpenAI.ImageUrlPart).image_url.url)
    if (data && IMAGE_FORMATS.has(data[1]!.toLowerCase())) return null
    return cannot('unsupported_content', `${param}.image_url.url`, 'Bedrock takes images as bytes: base64 data URLs of PNG, JPEG, GIF or WebP, not URLs')
  }
  const file = (part as OpenAI.FilePart).file
  const data = typeof file.file_data === 'string' ? DATA_URL.exec(file.file_data) : null
  if (data && DOCUMENT_FORMATS.has(data[1]!.toLowerCase())) return null
  return cannot(
    'unsupported_content',
    `${param}.file`,
    'Bedrock takes documents as bytes: a data URL in file_data of PDF, CSV, DOC, DOCX, XLS, XLSX, HTML, TXT or Markdown; file ids cannot be sent',
  )
}

function partProblem(part: OpenAI.ContentPart, param: string, role: OpenAI.Role): Unsupported | null {
  if (part.type === 'text') return null
  if (part.type === 'refusal' && role === 'assistant') return null
  if ((part.type === 'image_url' || part.type === 'file') && role === 'user') return mediaProblem(part, param)
  if (part.type === 'input_audio') return cannot('unsupported_content', param, 'Bedrock Converse takes no audio input')
  return cannot('unsupported_content', `${param}.type`, `A "${part.type}" part cannot be sent to Bedrock in a ${role} message`)
}

function toolsProblem(request: OpenAI.ChatRequest): Unsupported | null {
  for (const [i, tool] of (request.tools ?? []).entries()) {
    if (tool.type !== 'function') return cannot('unsupported_parameter', `tools.${i}.type`, `Bedrock takes function tools only, not "${tool.type}"`)
  }
  const choice = request.tool_choice
  if (typeof choice === 'object' && choice !== null && choice.type !== 'function') {
    return cannot('unsupported_parameter', 'tool_choice', `Bedrock cannot take a tool_choice of type "${choice.type}"`)
  }
  return null
}

/**
 * Why a Bedrock target cannot serve this request (its `model` is the target's model id) without
 * changing what the caller gets back, or null when it can. The alias then tries its next target;
 * with none left, this becomes the 400.
 */
export function bedrockCannotServe(request: OpenAI.ChatRequest): Unsupported | null {
  const field = unservedField(request, POLICY)
  if (field !== null) return cannot('unsupported_parameter', field, `Bedrock cannot serve "${field}" as sent`)
  for (const [i, message] of request.messages.entries()) {
    if (!Array.isArray(message.content)) continue
    for (const [j, part] of message.content.entries()) {
      const problem = partProblem(part, `messages.${i}.content.${j}`, message.role)
      if (problem) return problem
    }
  }
  const tools = toolsProblem(request)
  if (tools) return tools
  const format = request.response_format
  if (format && !['text', 'json_object', 'json_schema'].includes(format.type)) {
    return cannot('unsupported_parameter', 'response_format.type', `Bedrock cannot take a response_format of type "${format.type}"`)
  }
  const effort = request.reasoning_effort
  if (isClaude(request.model) && typeof effort === 'string' && !THINKING_BUDGETS.has(effort) && !NO_THINKING.has(effort)) {
    return cannot('unsupported_parameter', 'reasoning_effort', `reasoning_effort "${effort}" has no thinking budget on Claude`)
  }
  return null
}

/**
 * The hints of a chat request a Bedrock target cannot use, which the translation leaves out: named
 * in x-svc-dropped. `reasoning_effort` reaches Claude only (as its thinking budget); `parallel_tool_calls:
 * false` has no Converse field.
 */
export function droppedForBedrock(request: OpenAI.ChatRequest): string[] {
  const dropped = droppedFieldsOf(request, DROPPED_FIELDS)
  const effort = request.reasoning_effort
  if (typeof effort === 'string' && !NO_THINKING.has(effort) && !isClaude(request.model)) dropped.push('reasoning_effort')
  if (request.parallel_tool_calls === false) dropped.push('parallel_tool_calls')
  return dropped
}

/** What a generateContent request cannot carry from the pivot: such a target is skipped, and with none left the caller gets a 400 naming the field. */
import type { Unsupported } from '../../errors'
import { CHAT_CORE_FIELDS, CHAT_NEUTRAL_VALUES, droppedFieldsOf, OPENAI_ONLY_HINTS, unservedField } from '../pivot/field-policy'
import type * as OpenAI from '../pivot/types'
import { cannot, DATA_URL, GS_URL, HTTP_URL, THINKING_BUDGETS } from './common'

/** Pivot fields Google has no room for and that change nothing the caller gets back: left out, and named in x-svc-dropped. */
export const DROPPED_FIELDS = new Set(['user', ...OPENAI_ONLY_HINTS])

/** Pivot fields translated (src/wire/gemini/request-from-chat.ts). */
const TRANSLATED_FIELDS = new Set([...CHAT_CORE_FIELDS, 'seed', 'presence_penalty', 'frequency_penalty'])

const POLICY = { translated: TRANSLATED_FIELDS, dropped: DROPPED_FIELDS, neutral: CHAT_NEUTRAL_VALUES }

/** A URI Google fetches itself: https (the Gemini API and Vertex AI) or Cloud Storage (Vertex AI). */
export const isFileUri = (uri: unknown): uri is string => typeof uri === 'string' && (HTTP_URL.test(uri) || GS_URL.test(uri))

function userPartProblem(part: OpenAI.ContentPart, param: string): Unsupported | null {
  switch (part.type) {
    case 'image_url': {
      const url = (part as OpenAI.ImageUrlPart).image_url?.url
      if (
        DATA_URL.exec(url ?? '')?.[1]
          ?.toLowerCase()
          .startsWith('image/') ||
        isFileUri(url)
      )
        return null
      return cannot('unsupported_content', `${param}.image_url.url`, 'Gemini takes images as base64 data URLs of an image type, or as https or gs:// URIs')
    }
    case 'file': {
      const file = (part as OpenAI.FilePart).file ?? {}
      if (typeof file.file_data === 'string' && DATA_URL.test(file.file_data)) return null
      if (file.file_data === undefined && isFileUri(file.file_id)) return null
      return cannot('unsupported_content', `${param}.file`, 'Gemini takes files as base64 data URLs in file_data, or as https or gs:// URIs in file_id')
    }
    case 'input_audio':
      return null
  }
  return cannot('unsupported_content', `${param}.type`, `A "${part.type}" part cannot be sent to Gemini in a user message`)
}

function partProblem(part: OpenAI.ContentPart, param: string, role: OpenAI.Role): Unsupported | null {
  if (part.type === 'text') return null
  if (part.type === 'refusal' && role === 'assistant') return null
  if (role === 'user') return userPartProblem(part, param)
  return cannot('unsupported_content', `${param}.type`, `A "${part.type}" part cannot be sent to Gemini in a ${role} message`)
}

function messagesProblem(messages: OpenAI.ChatMessage[]): Unsupported | null {
  for (const [i, message] of messages.entries()) {
    if (!Array.isArray(message.content)) continue
    for (const [j, part] of message.content.entries()) {
      const problem = partProblem(part, `messages.${i}.content.${j}`, message.role)
      if (problem) return problem
    }
  }
  return null
}

/**
 * Why Gemini cannot serve this request without changing what the caller gets back, or null when
 * it can. The caller's alias then tries its next target; with none left, this becomes the 400.
 */
export function geminiCannotServe(request: OpenAI.ChatRequest): Unsupported | null {
  const field = unservedField(request, POLICY)
  if (field !== null) return cannot('unsupported_parameter', field, `Gemini cannot serve "${field}" as sent`)
  const problem = messagesProblem(request.messages)
  if (problem) return problem
  for (const [i, tool] of (request.tools ?? []).entries()) {
    if (tool.type !== 'function') return cannot('unsupported_parameter', `tools.${i}.type`, `Gemini takes function tools only, not "${tool.type}"`)
  }
  const choice = request.tool_choice
  if (typeof choice === 'object' && choice !== null && choice.type !== 'function') {
    return cannot('unsupported_parameter', 'tool_choice', `Gemini cannot take a tool_choice of type "${choice.type}"`)
  }
  const format = request.response_format
  if (format && !['text', 'json_object', 'json_schema'].includes(format.type)) {
    return cannot('unsupported_parameter', 'response_format.type', `Gemini cannot take a response_format of type "${format.type}"`)
  }
  const effort = request.reasoning_effort
  if (typeof effort === 'string' && !THINKING_BUDGETS.has(effort)) {
    return cannot('unsupported_parameter', 'reasoning_effort', `reasoning_effort "${effort}" has no Gemini thinking budget`)
  }
  if (Array.isArray(request.stop) && request.stop.length > 5) {
    return cannot('unsupported_parameter', 'stop', 'Gemini takes at most 5 stop sequences')
  }
  return null
}

/**
 * The hints of a chat request Gemini has no room for, which the translation leaves out: named in
 * x-svc-dropped. `parallel_tool_calls: false` among them: Gemini has no switch for it.
 */
export function droppedFromChat(request: OpenAI.ChatRequest): string[] {
  const dropped = droppedFieldsOf(request, DROPPED_FIELDS)
  if (request.parallel_tool_calls === false) dropped.push('parallel_tool_calls')
  return dropped
}

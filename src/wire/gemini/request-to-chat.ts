/**
 * A generateContent request as a pivot chat request: for targets that do not speak Gemini, of
 * Gemini-native callers (Gemini CLI, the Google GenAI SDK). Assumes `chatCannotServe` found nothing.
 */
import type * as OpenAI from '../pivot/types'
import type { SealedReasoning } from '../pivot/sealed-reasoning'
import { SKIP_SIGNATURE, THINKING_BUDGETS } from './common'
import { jsonSchemaOf, type Schema } from './inbound-types'
import type * as Gemini from './types'

/** How the target takes what has no exact pivot form. */
export interface ToChatOptions {
  /** The target's highest reasoning effort (`max_reasoning_effort`). */
  maxEffort: string
  /**
   * The reasoning a `thoughtSignature` this gateway sealed holds (see answer-from-chat), as the
   * target may have it back; null for any other signature (a Gemini model's own, Gemini CLI's
   * `skip_thought_signature_validator`), which no other model can read.
   */
  unseal(signature: string): SealedReasoning | null
}

export interface ToChat {
  chat: OpenAI.ChatRequest
  /** Thought signatures that were not this gateway's: left out (named in x-svc-dropped). */
  foreignSignatures: boolean
}

/** `reasoning_effort` values from least to most effort. */
const EFFORTS = ['minimal', 'low', 'medium', 'high', 'xhigh']

function capEffort(effort: string, max: string): string {
  const at = EFFORTS.indexOf(effort)
  const cap = EFFORTS.indexOf(max)
  return at !== -1 && cap !== -1 && at > cap ? max : effort
}

/** The efforts a budget can stand for, from least to most: each takes budgets up to its own (common.ts, Google's mapping). */
const BUDGET_STEPS = ['low', 'medium', 'high'].map((effort) => [effort, THINKING_BUDGETS.get(effort)!] as const)

/**
 * `thinkingConfig` as `reasoning_effort`, the inverse of Google's own mapping (common.ts): a level as
 * itself; a budget of 0 is `none`, -1 (dynamic) medium, else the least effort whose budget covers it
 * (up to 1024 low, 8192 medium, 24576 high, above xhigh); at most `max`. `includeThoughts` alone asks
 * for no effort.
 */
export function effortOfThinking(config: Gemini.ThinkingConfig | undefined, max: string): string | undefined {
  if (!config) return undefined
  if (typeof config.thinkingLevel === 'string' && config.thinkingLevel !== 'THINKING_LEVEL_UNSPECIFIED')
    return capEffort(config.thinkingLevel.toLowerCase(), max)
  const budget = config.thinkingBudget
  if (typeof budget !== 'number') return undefined
  if (budget === 0) return 'none'
  if (budget < 0) return capEffort('medium', max)
  return capEffort(BUDGET_STEPS.find(([, limit]) => budget <= limit)?.[0] ?? 'xhigh', max)
}

const textPart = (text: string): OpenAI.TextPart => ({ type: 'text', text })

/** A user part as a pivot content part (chatCannotServe let only these through). */
function userPart(part: Gemini.Part): OpenAI.ContentPart | null {
  if (typeof part.text === 'string') return part.thought === true ? null : textPart(part.text)
  const data = part.inlineData
  if (data) {
    const type = data.mimeType
    if (type.startsWith('image/')) return { type: 'image_url', image_url: { url: `data:${type};base64,${data.data}` } }
    if (type === 'application/pdf') return { type: 'file', file: { file_data: `data:${type};base64,${data.data}`, filename: 'document.pdf' } }
    if (type === 'text/plain') return textPart(Buffer.from(data.data, 'base64').toString('utf8'))
    return { type: 'input_audio', input_audio: { data: data.data, format: /wav/.test(type) ? 'wav' : 'mp3' } }
  }
  if (part.fileData) return { type: 'image_url', image_url: { url: part.fileData.fileUri } }
  return null
}

/** A function's answer as the tool message's text: Google's `output` / `error` keys as their text, anything else as JSON. */
function responseText(response: Record<string, unknown> | undefined): string {
  const keys = Object.keys(response ?? {})
  if (keys.length === 1 && typeof response!.output === 'string') return response!.output
  if (keys.length === 1 && typeof response!.error === 'string') return `Error: ${response!.error}`
  return JSON.stringify(response ?? {})
}

const contentOf = (parts: OpenAI.ContentPart[]): string | OpenAI.ContentPart[] =>
  parts.length === 1 && parts[0]!.type === 'text' ? (parts[0] as OpenAI.TextPart).text : parts

/** The calls of the last model turn, for matching the function responses that answer them: by id, else by position and name. */
class PendingCalls {
  private calls: { id: string; name: string; answered: boolean }[] = []

  reset(calls: OpenAI.ToolCall[]): void {
    this.calls = calls.map((call) => ({ id: call.id, name: call.function.name, answered: false }))
  }

  /** The id of the call a response answers. */
  answer(response: Gemini.FunctionResponse, fallback: string): string {
    const call =
      (response.id ? this.calls.find((c) => c.id === response.id && !c.answered) : undefined) ?? this.calls.find((c) => c.name === response.name && !c.answered)
    if (!call) return response.id ?? fallback
    call.answered = true
    return call.id
  }
}

/** The conversation as pivot messages, and whether it carried signatures only Gemini can read. */
function toMessages(request: Gemini.GenerateContentRequest, options: ToChatOptions): { messages: OpenAI.ChatMessage[]; foreign: boolean } {
  const messages: OpenAI.ChatMessage[] = []
  const system = (request.systemInstruction?.parts ?? []).flatMap((p) => (typeof p.text === 'string' && p.text !== '' ? [textPart(p.text)] : []))
  if (system.length > 0) messages.push({ role: 'system', content: contentOf(system) })
  const pending = new PendingCalls()
  let foreign = false
  for (const [i, content] of request.contents.entries()) {
    if (content.role === 'model') {
      const { message, signatureForeign } = assistantMessage(content, i, options)
      foreign ||= signatureForeign
      pending.reset(message.tool_calls ?? [])
      messages.push(message)
      continue
    }
    const parts: OpenAI.ContentPart[] = []
    for (const [j, part] of content.parts.entries()) {
      const response = part.functionResponse
      if (response) {
        messages.push({ role: 'tool', tool_call_id: pending.answer(response, `call_${i}_${j}`), content: responseText(response.response) })
        continue
      }
      const converted = userPart(part)
      if (converted) parts.push(converted)
    }
    if (parts.length > 0) messages.push({ role: 'user', content: contentOf(parts) })
  }
  return { messages, foreign }
}

/**
 * A model turn: its text (thought summaries left out), its function calls as tool calls (their own
 * id, else one made from their place, stable from turn to turn), and the reasoning a signature this
 * gateway sealed carries, restored as the target may have it.
 */
function assistantMessage(content: Gemini.Content, at: number, options: ToChatOptions): { message: OpenAI.ChatMessage; signatureForeign: boolean } {
  let text = ''
  const calls: OpenAI.ToolCall[] = []
  let reasoning: SealedReasoning | null = null
  let signatureForeign = false
  for (const [j, part] of content.parts.entries()) {
    if (typeof part.thoughtSignature === 'string') {
      const opened: SealedReasoning | null = reasoning ? null : options.unseal(part.thoughtSignature)
      if (opened) reasoning = opened
      else if (!reasoning && part.thoughtSignature !== SKIP_SIGNATURE) signatureForeign = true
    }
    if (typeof part.text === 'string' && part.thought !== true) text += part.text
    const call = part.functionCall
    if (call) calls.push({ id: call.id ?? `call_${at}_${j}`, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) } })
  }
  const message: OpenAI.ChatMessage = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text }
  if (calls.length > 0) message.tool_calls = calls
  if (reasoning?.thinking_blocks && reasoning.thinking_blocks.length > 0) message.thinking_blocks = reasoning.thinking_blocks
  if (reasoning?.reasoning_content) message.reasoning_content = reasoning.reasoning_content
  return { message, signatureForeign }
}

/** Function declarations as function tools, their parameters as JSON Schema. */
function toTools(request: Gemini.GenerateContentRequest): OpenAI.FunctionTool[] {
  const tools: OpenAI.FunctionTool[] = []
  for (const tool of request.tools ?? []) {
    for (const declaration of tool.functionDeclarations ?? []) {
      const legacy = (declaration as { parameters?: Schema }).parameters
      const parameters = declaration.parametersJsonSchema ?? (legacy ? jsonSchemaOf(legacy) : { type: 'object', properties: {} })
      const fn: OpenAI.FunctionTool['function'] = { name: declaration.name, parameters }
      if (declaration.description) fn.description = declaration.description
      tools.push({ type: 'function', function: fn })
    }
  }
  return tools
}

/**
 * `functionCallingConfig` as `tool_choice`: AUTO and VALIDATED auto, ANY required (one allowed name:
 * that function), NONE none; allowed names narrow the tools the target is offered.
 */
function withToolChoice(request: Gemini.GenerateContentRequest, tools: OpenAI.FunctionTool[], out: OpenAI.ChatRequest): void {
  const config = request.toolConfig?.functionCallingConfig
  const allowed = config?.allowedFunctionNames
  const offered = allowed && allowed.length > 0 ? tools.filter((t) => allowed.includes(t.function.name)) : tools
  if (offered.length === 0) return
  out.tools = offered
  if (config?.mode === 'NONE') out.tool_choice = 'none'
  else if (config?.mode === 'ANY') out.tool_choice = offered.length === 1 ? { type: 'function', function: { name: offered[0]!.function.name } } : 'required'
  else if (config?.mode === 'AUTO' || config?.mode === 'VALIDATED') out.tool_choice = 'auto'
}

/** `responseMimeType` application/json, with `responseJsonSchema` (or Google's `responseSchema`) when given. */
function responseFormat(config: Gemini.GenerationConfig): OpenAI.ResponseFormat | undefined {
  if (config.responseMimeType !== 'application/json') return undefined
  const schema = config.responseJsonSchema ?? (config.responseSchema ? jsonSchemaOf(config.responseSchema as Schema) : undefined)
  if (!schema) return { type: 'json_object' }
  return { type: 'json_schema', json_schema: { name: 'response', schema, strict: true } }
}

function withGenerationConfig(config: Gemini.GenerationConfig, options: ToChatOptions, out: OpenAI.ChatRequest): void {
  if (typeof config.maxOutputTokens === 'number') out.max_completion_tokens = config.maxOutputTokens
  if (typeof config.temperature === 'number') out.temperature = config.temperature
  if (typeof config.topP === 'number') out.top_p = config.topP
  if (Array.isArray(config.stopSequences) && config.stopSequences.length > 0) out.stop = config.stopSequences
  if (typeof config.seed === 'number') out.seed = config.seed
  if (typeof config.presencePenalty === 'number') out.presence_penalty = config.presencePenalty
  if (typeof config.frequencyPenalty === 'number') out.frequency_penalty = config.frequencyPenalty
  const format = responseFormat(config)
  if (format) out.response_format = format
  const effort = effortOfThinking(config.thinkingConfig, options.maxEffort)
  if (effort !== undefined) out.reasoning_effort = effort
}

/** A generateContent request as a pivot chat request for `model`; `stream` as the route says (it is the URL's, not the body's). */
export function toChatRequest(request: Gemini.GenerateContentRequest, model: string, stream: boolean, options: ToChatOptions): ToChat {
  const { messages, foreign } = toMessages(request, options)
  const chat: OpenAI.ChatRequest = { model, messages }
  if (stream) chat.stream = true
  withToolChoice(request, toTools(request), chat)
  withGenerationConfig(request.generationConfig ?? {}, options, chat)
  return { chat, foreignSignatures: foreign }
}

/** A pivot chat request as a generateContent request: for Gemini API and Vertex AI targets. */
import { invalidRequest } from '../../errors'
import type * as OpenAI from '../pivot/types'
import { DATA_URL, mimeOfUri, SKIP_SIGNATURE, THINKING_BUDGETS } from './common'
import { isFileUri } from './cannot-serve'
import { signatureOf } from './signature'
import type * as Gemini from './types'

/** A media part: base64 data URLs inline, URIs Google fetches itself as file data. */
function mediaPart(url: string): Gemini.Part {
  const data = DATA_URL.exec(url)
  if (data) return { inlineData: { mimeType: data[1]!.toLowerCase(), data: data[2]! } }
  const mimeType = mimeOfUri(url)
  return { fileData: { ...(mimeType ? { mimeType } : {}), fileUri: url } }
}

/** A content part as a Gemini part; null for what carries nothing (cannot-serve.ts refused the rest). */
function partOf(part: OpenAI.ContentPart): Gemini.Part | null {
  switch (part.type) {
    case 'text':
      return { text: (part as OpenAI.TextPart).text }
    case 'refusal':
      return { text: (part as OpenAI.RefusalPart).refusal }
    case 'image_url':
      return mediaPart((part as OpenAI.ImageUrlPart).image_url.url)
    case 'file': {
      const file = (part as OpenAI.FilePart).file
      const source = file.file_data ?? file.file_id
      return typeof source === 'string' && (DATA_URL.test(source) || isFileUri(source)) ? mediaPart(source) : null
    }
    case 'input_audio': {
      const audio = (part as OpenAI.InputAudioPart).input_audio
      return { inlineData: { mimeType: `audio/${audio.format}`, data: audio.data } }
    }
    default:
      return null
  }
}

function partsOf(content: OpenAI.ChatMessage['content']): Gemini.Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }]
  if (!Array.isArray(content)) return []
  return content.map(partOf).filter((part): part is Gemini.Part => part !== null && part.text !== '')
}

const textOf = (content: OpenAI.ChatMessage['content']): string =>
  typeof content === 'string' ? content : (content ?? []).flatMap((p) => (p.type === 'text' ? [(p as OpenAI.TextPart).text] : [])).join('\n')

/** Tool-call arguments as the object Gemini wants; "" is none. Anything else that is not a JSON object is the caller's error. */
function argsOf(args: string, param: string): Record<string, unknown> {
  if (args.trim() === '') return {}
  let value: unknown
  try {
    value = JSON.parse(args)
  } catch {
    throw invalidRequest(`Invalid request: ${param} is not valid JSON`, { param })
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidRequest(`Invalid request: ${param} must be a JSON object`, { param })
  return value as Record<string, unknown>
}

/**
 * An assistant message as a model content: its text, then its tool calls as function calls, each
 * Gemini signature back on the part it came with (signature.ts). The first function call of a step
 * without one gets Google's stand-in, as calls another model made have none.
 */
function modelParts(message: OpenAI.ChatMessage, i: number): Gemini.Part[] {
  const parts = partsOf(message.content)
  const calls: Gemini.Part[] = (message.tool_calls ?? []).map((call, j) => ({
    functionCall: { name: call.function.name, args: argsOf(call.function.arguments, `messages.${i}.tool_calls.${j}.function.arguments`) },
  }))
  if (message.function_call) {
    calls.push({ functionCall: { name: message.function_call.name, args: argsOf(message.function_call.arguments, `messages.${i}.function_call.arguments`) } })
  }
  for (const block of message.thinking_blocks ?? []) {
    const signed = signatureOf(block)
    if (!signed) continue
    if (signed.anchor === 'text') {
      const last = parts.at(-1)
      if (last) last.thoughtSignature = signed.signature
      else parts.push({ text: '', thoughtSignature: signed.signature })
    } else {
      const call = calls[signed.anchor.call]
      if (call) call.thoughtSignature = signed.signature
    }
  }
  if (calls[0] && calls[0].thoughtSignature === undefined) calls[0].thoughtSignature = SKIP_SIGNATURE
  return [...parts, ...calls]
}

/** A tool's answer as Gemini's `response` object: a JSON object as it is, any other text under `output`. */
function responseOf(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>
  } catch {}
  return { output: text }
}

interface Turns {
  system: Gemini.Part[]
  contents: Gemini.Content[]
}

/** Tool results answering one assistant message, put in the order of its calls (Gemini pairs them by position and name). */
class PendingResults {
  /** The latest assistant message's calls: id → [position, name]. */
  private calls = new Map<string, [number, string]>()
  private results: [number, Gemini.Part][] = []
  private lastFunction = ''

  expect(message: OpenAI.ChatMessage): void {
    this.calls = new Map((message.tool_calls ?? []).map((call, j) => [call.id, [j, call.function.name]]))
    if (message.function_call) this.lastFunction = message.function_call.name
  }

  add(message: OpenAI.ChatMessage, i: number): void {
    const response = responseOf(textOf(message.content))
    if (message.role === 'function') {
      this.results.push([this.results.length, { functionResponse: { name: message.name ?? this.lastFunction, response } }])
      return
    }
    const call = this.calls.get(message.tool_call_id ?? '')
    if (!call)
      throw invalidRequest(`Invalid request: messages.${i}.tool_call_id answers no tool call of the assistant message before it`, {
        param: `messages.${i}.tool_call_id`,
      })
    this.results.push([call[0], { functionResponse: { name: call[1], response } }])
  }

  /** The results gathered so far, in call order; none left after. */
  take(): Gemini.Part[] {
    const parts = this.results.sort(([a], [b]) => a - b).map(([, part]) => part)
    this.results = []
    return parts
  }
}

/**
 * Pivot messages as Gemini turns: leading system and developer messages become the system
 * instruction; later ones a user turn in `<system-reminder>` (Gemini has no system turn; the
 * upstream's `mid_system` may have placed them already). Tool results become function responses in
 * one user turn; neighbours of the same role merge.
 */
function toTurns(messages: OpenAI.ChatMessage[]): Turns {
  const system: Gemini.Part[] = []
  const contents: Gemini.Content[] = []
  const pending = new PendingResults()
  const push = (role: 'user' | 'model', parts: Gemini.Part[]) => {
    if (parts.length === 0) return
    const previous = contents.at(-1)
    if (previous?.role === role) previous.parts.push(...parts)
    else contents.push({ role, parts })
  }
  for (const [i, message] of messages.entries()) {
    if (message.role === 'tool' || message.role === 'function') {
      pending.add(message, i)
      continue
    }
    push('user', pending.take())
    if (message.role === 'system' || message.role === 'developer') {
      if (contents.length === 0) system.push(...partsOf(message.content))
      else push('user', [{ text: `<system-reminder>\n${textOf(message.content)}\n</system-reminder>` }])
    } else if (message.role === 'assistant') {
      pending.expect(message)
      push('model', modelParts(message, i))
    } else {
      push('user', partsOf(message.content))
    }
  }
  push('user', pending.take())
  return { system, contents }
}

function toTools(request: OpenAI.ChatRequest): Gemini.FunctionDeclaration[] {
  const declarations: Gemini.FunctionDeclaration[] = []
  const declare = (name: string, description: string | undefined, parameters: Record<string, unknown> | undefined) =>
    declarations.push({ name, ...(description ? { description } : {}), ...(parameters ? { parametersJsonSchema: parameters } : {}) })
  for (const tool of (request.tools ?? []) as OpenAI.FunctionTool[]) declare(tool.function.name, tool.function.description, tool.function.parameters)
  for (const fn of request.functions ?? []) declare(fn.name, fn.description, fn.parameters)
  return declarations
}

function toToolConfig(request: OpenAI.ChatRequest): Gemini.ToolConfig | undefined {
  const choice = request.tool_choice ?? request.function_call
  if (choice === 'none') return { functionCallingConfig: { mode: 'NONE' } }
  if (choice === 'auto') return { functionCallingConfig: { mode: 'AUTO' } }
  if (choice === 'required') return { functionCallingConfig: { mode: 'ANY' } }
  if (typeof choice === 'object' && choice !== null) {
    const name = 'function' in choice ? (choice as { function: { name: string } }).function.name : (choice as { name: string }).name
    return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [name] } }
  }
  return undefined
}

function toGenerationConfig(request: OpenAI.ChatRequest): Gemini.GenerationConfig {
  const config: Gemini.GenerationConfig = {}
  const max = request.max_completion_tokens ?? request.max_tokens
  if (typeof max === 'number') config.maxOutputTokens = max
  if (typeof request.temperature === 'number') config.temperature = request.temperature
  if (typeof request.top_p === 'number') config.topP = request.top_p
  if (typeof request.stop === 'string') config.stopSequences = [request.stop]
  else if (Array.isArray(request.stop) && request.stop.length > 0) config.stopSequences = request.stop
  if (typeof request.seed === 'number') config.seed = request.seed
  if (typeof request.presence_penalty === 'number') config.presencePenalty = request.presence_penalty
  if (typeof request.frequency_penalty === 'number') config.frequencyPenalty = request.frequency_penalty
  const format = request.response_format
  if (format?.type === 'json_object') config.responseMimeType = 'application/json'
  else if (format?.type === 'json_schema') {
    config.responseMimeType = 'application/json'
    if (format.json_schema.schema) config.responseJsonSchema = format.json_schema.schema
  }
  const budget = typeof request.reasoning_effort === 'string' ? THINKING_BUDGETS.get(request.reasoning_effort) : undefined
  // Summaries only when reasoning was asked for: they are what becomes reasoning_content.
  if (budget !== undefined) config.thinkingConfig = budget === 0 ? { thinkingBudget: 0 } : { thinkingBudget: budget, includeThoughts: true }
  return config
}

/**
 * A pivot chat request as a generateContent request (the model and streaming are in the URL).
 * Assumes geminiCannotServe found nothing; throws a 400 for history it cannot read (tool arguments
 * that are not a JSON object, a tool result that answers no call).
 */
export function toGenerateContentRequest(request: OpenAI.ChatRequest): Gemini.GenerateContentRequest {
  const { system, contents } = toTurns(request.messages)
  const body: Gemini.GenerateContentRequest = { contents }
  if (system.length > 0) body.systemInstruction = { parts: system }
  const declarations = toTools(request)
  if (declarations.length > 0) {
    body.tools = [{ functionDeclarations: declarations }]
    const toolConfig = toToolConfig(request)
    if (toolConfig) body.toolConfig = toolConfig
  }
  const config = toGenerationConfig(request)
  if (Object.keys(config).length > 0) body.generationConfig = config
  return body
}

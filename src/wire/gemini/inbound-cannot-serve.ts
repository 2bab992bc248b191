/**
 * The inbound side's checks: a generateContent request's shape (every target), and what a target
 * that does not speak Gemini cannot be given without changing what the caller gets back (refused,
 * 400 naming the field), or does not need (left out and named in `x-svc-dropped`).
 */
import { invalidRequest, type Unsupported } from '../../errors'
import type { Content, GenerateContentRequest, Part } from './types'

/** The top-level members a translation reads; `model` is the URL's (the SDK's countTokens wrapper carries one). */
const TRANSLATED_MEMBERS = new Set(['contents', 'systemInstruction', 'tools', 'toolConfig', 'generationConfig', 'model'])
/** Top-level members a translated target does without: hints, or the gateway's own business. */
const DROPPED_MEMBERS = ['safetySettings', 'labels', 'serviceTier', 'store']

/** generationConfig members a translation reads. */
const CONFIG_READ = new Set([
  'maxOutputTokens',
  'temperature',
  'topP',
  'stopSequences',
  'candidateCount',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
  'responseMimeType',
  'responseJsonSchema',
  'responseSchema',
  'responseModalities',
  'thinkingConfig',
])
/** generationConfig members a translated target does without (sampling and rendering hints it has no field for). */
const CONFIG_DROPPED = ['topK', 'mediaResolution', 'enableEnhancedCivicAnswers', 'audioTimestamp', 'routingConfig', 'modelSelectionConfig']

/** The data members of a part a translation carries; the rest (code execution, video metadata...) cannot be. */
const PART_MEMBERS = new Set(['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse', 'thought', 'thoughtSignature'])

const refused = (param: string, message: string, code: Unsupported['code'] = 'unsupported_parameter'): Unsupported => ({ code, param, message })

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

function checkContent(content: unknown, param: string, roles: readonly string[]): void {
  if (!isObject(content)) throw invalidRequest(`Invalid request: ${param} must be an object`, { param })
  if (content.role !== undefined && !roles.includes(content.role as string))
    throw invalidRequest(`Invalid request: ${param}.role must be one of ${roles.join(', ')}`, { param: `${param}.role` })
  if (!Array.isArray(content.parts)) throw invalidRequest(`Invalid request: ${param}.parts must be an array`, { param: `${param}.parts` })
  for (const [j, part] of content.parts.entries())
    if (!isObject(part)) throw invalidRequest(`Invalid request: ${param}.parts.${j} must be an object`, { param: `${param}.parts.${j}` })
}

/** The shape every target needs: `contents` a non-empty list of contents with their parts; refused naming the field. */
export function checkGenerateContentRequest(request: GenerateContentRequest): void {
  if (!Array.isArray(request.contents) || request.contents.length === 0)
    throw invalidRequest('Invalid request: contents must be a non-empty array', { param: 'contents' })
  for (const [i, content] of request.contents.entries()) checkContent(content, `contents.${i}`, ['user', 'model', 'function'])
  if (request.systemInstruction !== undefined) checkContent(request.systemInstruction, 'systemInstruction', ['user', 'system', 'model'])
  if (request.tools !== undefined && !Array.isArray(request.tools)) throw invalidRequest('Invalid request: tools must be an array', { param: 'tools' })
  if (request.generationConfig !== undefined && !isObject(request.generationConfig))
    throw invalidRequest('Invalid request: generationConfig must be an object', { param: 'generationConfig' })
}

function partProblem(part: Part, param: string, role: Content['role'] | 'function'): Unsupported | null {
  for (const key of Object.keys(part))
    if (!PART_MEMBERS.has(key)) return refused(`${param}.${key}`, `A "${key}" part can be sent only to a Gemini or Vertex AI target`, 'unsupported_content')
  if (role === 'model' && (part.inlineData || part.fileData))
    return refused(
      `${param}.${part.inlineData ? 'inlineData' : 'fileData'}`,
      'Images and files in model turns can be sent only to a Gemini or Vertex AI target',
      'unsupported_content',
    )
  if (role !== 'model' && part.functionCall) return refused(`${param}.functionCall`, 'A functionCall belongs in a model turn', 'unsupported_content')
  if (role === 'model' && part.functionResponse) return refused(`${param}.functionResponse`, 'A functionResponse belongs in a user turn', 'unsupported_content')
  const data = part.inlineData
  if (data) {
    const type = String(data.mimeType ?? '')
    if (!/^image\/|^application\/pdf$|^audio\/(wav|x-wav|mp3|mpeg)$|^text\/plain$/.test(type))
      return refused(`${param}.inlineData.mimeType`, `Inline data of type "${type}" can be sent only to a Gemini or Vertex AI target`, 'unsupported_content')
  }
  const file = part.fileData
  if (file && !(/^https?:\/\//.test(String(file.fileUri)) && String(file.mimeType ?? 'image/').startsWith('image/')))
    return refused(
      `${param}.fileData`,
      'Files by URI (other than images at an http(s) URL) can be read only by a Gemini or Vertex AI target',
      'unsupported_content',
    )
  const response = part.functionResponse as Record<string, unknown> | undefined
  if (response && response.parts !== undefined)
    return refused(`${param}.functionResponse.parts`, 'Multimodal function responses can be sent only to a Gemini or Vertex AI target', 'unsupported_content')
  return null
}

function toolsProblem(request: GenerateContentRequest): Unsupported | null {
  for (const [i, tool] of (request.tools ?? []).entries()) {
    for (const key of Object.keys(tool)) {
      if (key !== 'functionDeclarations') return refused(`tools.${i}.${key}`, `The "${key}" tool is Google's own: it runs only on a Gemini or Vertex AI target`)
    }
  }
  const mode = request.toolConfig?.functionCallingConfig?.mode
  if (mode !== undefined && !['AUTO', 'ANY', 'NONE', 'VALIDATED', 'MODE_UNSPECIFIED'].includes(mode))
    return refused('toolConfig.functionCallingConfig.mode', `Unknown function calling mode "${String(mode)}"`)
  return null
}

function configProblem(request: GenerateContentRequest): Unsupported | null {
  const config = request.generationConfig ?? {}
  for (const key of Object.keys(config))
    if (!CONFIG_READ.has(key) && !CONFIG_DROPPED.includes(key))
      return refused(`generationConfig.${key}`, `generationConfig.${key} can be sent only to a Gemini or Vertex AI target`)
  if (typeof config.candidateCount === 'number' && config.candidateCount > 1)
    return refused('generationConfig.candidateCount', 'Several candidates can be asked only of a Gemini or Vertex AI target')
  const modalities = config.responseModalities
  if (Array.isArray(modalities) && modalities.some((m) => String(m).toUpperCase() !== 'TEXT'))
    return refused('generationConfig.responseModalities', 'Only TEXT answers can be asked of a target that is not Gemini')
  const mime = config.responseMimeType
  if (mime !== undefined && mime !== 'text/plain' && mime !== 'application/json')
    return refused('generationConfig.responseMimeType', `responseMimeType "${mime}" can be asked only of a Gemini or Vertex AI target`)
  return null
}

/**
 * Why a target that does not speak Gemini cannot serve this request as asked (Google's own tools,
 * parts it has no form for, generation settings it cannot honour), or null. Naming the exact field.
 */
export function chatCannotServe(request: GenerateContentRequest): Unsupported | null {
  for (const key of Object.keys(request)) {
    if (TRANSLATED_MEMBERS.has(key) || DROPPED_MEMBERS.includes(key)) continue
    return refused(key, `"${key}" can be sent only to a Gemini or Vertex AI target`)
  }
  for (const [i, content] of request.contents.entries()) {
    for (const [j, part] of content.parts.entries()) {
      const problem = partProblem(part, `contents.${i}.parts.${j}`, content.role ?? 'user')
      if (problem) return problem
    }
  }
  for (const [j, part] of (request.systemInstruction?.parts ?? []).entries())
    if (part.text === undefined)
      return refused(`systemInstruction.parts.${j}`, 'A system instruction can carry only text for a target that is not Gemini', 'unsupported_content')
  return toolsProblem(request) ?? configProblem(request)
}

/** What a translated target gets without (named in x-svc-dropped): hints it has no field for. */
export function droppedFromRequest(request: GenerateContentRequest): string[] {
  const dropped = DROPPED_MEMBERS.filter((key) => request[key] !== undefined)
  const config = request.generationConfig ?? {}
  for (const key of CONFIG_DROPPED) if (config[key] !== undefined) dropped.push(`generationConfig.${key}`)
  for (const tool of request.tools ?? []) {
    for (const declaration of tool.functionDeclarations ?? []) {
      for (const key of ['behavior', 'response', 'responseJsonSchema'])
        if ((declaration as unknown as Record<string, unknown>)[key] !== undefined && !dropped.includes(`functionDeclarations.${key}`))
          dropped.push(`functionDeclarations.${key}`)
    }
  }
  return dropped
}

/**
 * A fake Gemini API, written from Google's published reference:
 *   - generateContent, streamGenerateContent (`?alt=sse`: each event a GenerateContentResponse),
 *     Content/Part, FunctionCall/FunctionResponse, GenerationConfig (responseMimeType,
 *     responseJsonSchema, thinkingConfig), ToolConfig.functionCallingConfig, UsageMetadata,
 *     FinishReason, PromptFeedback.blockReason: https://ai.google.dev/api/generate-content
 *   - countTokens (`generateContentRequest` with `model`): https://ai.google.dev/api/tokens
 *   - batchEmbedContents: https://ai.google.dev/api/embeddings
 *   - thought signatures (on the first function call of a step, or the last part of a text answer,
 *     in a stream on an empty text part of the last event; sent back on the same part; Gemini 3
 *     refuses a function call of the conversation without its signature, and
 *     `skip_thought_signature_validator` stands in for calls another model made):
 *     https://ai.google.dev/gemini-api/docs/thought-signatures
 *   - errors (`{error: {code, message, status, details}}`, RetryInfo, API_KEY_INVALID):
 *     https://ai.google.dev/gemini-api/docs/troubleshooting and https://cloud.google.com/apis/design/errors
 *
 * The model (`geminiModel`, shared with the fake Vertex AI) checks what a translation could get wrong
 * (roles, one data field a part, function responses answering the model's calls by position and
 * name, a signature (or Google's stand-in) on the first function call of every model turn, every
 * signature one it issued, on the part it issued it for; those that came back are in `returned`)
 * and answers deterministically:
 *   - `[[block:prompt]]` in the last user text: no candidate, `promptFeedback.blockReason: SAFETY`;
 *     `[[block:answer]]`: a partial text stopped with finishReason SAFETY;
 *   - function declarations and a mode other than NONE, and no function response since the last
 *     user text: a call of the allowed (or first) function, or of NAME for `[[call:NAME]]` in the
 *     last user text, with `toolInput(name)`; `[[parallel]]`
 *     makes it two calls (the second of the second function, or the first again);
 *   - `responseMimeType: application/json` with a schema: a JSON value of it;
 *   - otherwise `marker`, naming the last function response and the last user text.
 * Thinking (any budget but 0): a thought summary when `includeThoughts`, `thoughtsTokenCount` 7, and
 * a signature. Every answer is kept (`answers`), so tests can check the usage it reported.
 */
import { pieces, recordingServer, type RecordedCall, roughTokens, sampleOf } from './common'

export const GEMINI_MARKER = 'chatgate-gemini-final'
export const SKIP_SIGNATURE = 'skip_thought_signature_validator'

type Json = Record<string, any>

export interface GeminiModelOptions {
  /** The arguments of a call (default `{city: "Paris"}`). */
  toolInput?: (name: string) => Record<string, unknown>
  marker?: string
  /** Tells two fakes' signatures apart. */
  name?: string
}

export interface GeminiModel {
  /** The problem Google would answer 400 with, or null. */
  problem(body: Json): string | null
  /** The answer to a request (its events when streamed: see `events`). */
  answer(body: Json, model: string): Json
  /** The stream of an answer: thoughts, text pieces, each call, then an empty text part with the text's signature, the finish reason and the usage. */
  events(answer: Json): Json[]
  promptTokens(body: Json): number
  answers: Json[]
  /** Signatures issued, with the part each belongs on. */
  issued: Map<string, string>
  /** Signatures that came back on their part. */
  returned: Set<string>
}

const partKey = (part: Json): string =>
  part.functionCall ? `call:${part.functionCall.name}:${JSON.stringify(part.functionCall.args ?? {})}` : `text:${part.text ?? ''}`
const DATA_FIELDS = ['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse']
const userText = (content: Json | undefined): string =>
  (content?.parts ?? [])
    .filter((p: Json) => typeof p.text === 'string')
    .map((p: Json) => p.text)
    .join(' ')

export function googleError(code: number, status: string, message: string, details: Json[] = []): Response {
  return Response.json({ error: { code, message, status, ...(details.length > 0 ? { details } : {}) } }, { status: code })
}

export function geminiModel(options: GeminiModelOptions = {}): GeminiModel {
  const marker = options.marker ?? GEMINI_MARKER
  const tag = options.name ?? 'g'
  const issued = new Map<string, string>()
  const answers: Json[] = []
  const returned = new Set<string>()
  let counter = 0

  function signatureProblem(contents: Json[]): string | null {
    const carried = new Map<string, string>()
    for (const [i, content] of contents.entries()) {
      if (content.role !== 'model') continue
      const calls = (content.parts as Json[]).filter((p) => p.functionCall)
      if (calls.length > 0 && !calls[0]!.thoughtSignature) {
        return `Function call is missing a thought_signature in functionCall parts. contents[${i}].parts: the first functionCall of each step needs its thought signature.`
      }
      for (const part of content.parts as Json[]) {
        const signature = part.thoughtSignature
        if (signature === undefined || signature === SKIP_SIGNATURE) continue
        if (issued.get(signature) !== partKey(part)) return `contents[${i}]: Corrupted thought signature.`
        carried.set(signature, partKey(part))
      }
    }
    // Google takes its stand-in in place of any signature: which ones came back is recorded
    // (`returned`) for the tests to check, rather than refused here.
    for (const signature of carried.keys()) returned.add(signature)
    return null
  }

  function responseProblem(contents: Json[]): string | null {
    for (const [i, content] of contents.entries()) {
      const responses = (content.parts as Json[]).filter((p) => p.functionResponse)
      if (responses.length === 0) continue
      if (content.role !== 'user') return `contents[${i}]: function responses go in a user content`
      const calls = ((contents[i - 1]?.role === 'model' ? contents[i - 1]!.parts : []) as Json[]).filter((p) => p.functionCall)
      if (calls.length !== responses.length) {
        return `Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn (contents[${i}]).`
      }
      for (const [j, response] of responses.entries()) {
        if (response.functionResponse.name !== calls[j]!.functionCall.name)
          return `contents[${i}].parts[${j}]: function response ${response.functionResponse.name} answers no call in its position`
        if (typeof response.functionResponse.response !== 'object' || response.functionResponse.response === null)
          return `contents[${i}].parts[${j}].functionResponse.response: must be an object`
      }
    }
    return null
  }

  function problem(body: Json): string | null {
    const contents = body.contents
    if (!Array.isArray(contents) || contents.length === 0) return '* GenerateContentRequest.contents: contents is not specified'
    for (const [i, content] of contents.entries()) {
      if (!['user', 'model'].includes(content.role)) return `contents[${i}].role: Please use a valid role: user, model.`
      if (!Array.isArray(content.parts) || content.parts.length === 0) return `contents[${i}].parts: must not be empty`
      for (const [j, part] of content.parts.entries()) {
        const fields = DATA_FIELDS.filter((field) => part[field] !== undefined)
        if (fields.length !== 1) return `contents[${i}].parts[${j}]: a part has exactly one data field (oneof), not ${fields.join(', ') || 'none'}`
        if (part.thought && content.role !== 'model') return `contents[${i}].parts[${j}].thought: only the model thinks`
        if (part.inlineData && (typeof part.inlineData.mimeType !== 'string' || typeof part.inlineData.data !== 'string'))
          return `contents[${i}].parts[${j}].inlineData: mimeType and data required`
        if (part.fileData && typeof part.fileData.fileUri !== 'string') return `contents[${i}].parts[${j}].fileData.fileUri: required`
      }
    }
    for (const tool of body.tools ?? []) {
      for (const declaration of tool.functionDeclarations ?? []) {
        if (declaration.parameters !== undefined) return 'functionDeclarations: use parametersJsonSchema (JSON Schema), not parameters here'
      }
    }
    const config = body.generationConfig?.thinkingConfig
    if (config && config.thinkingBudget !== undefined && config.thinkingLevel !== undefined)
      return 'You can only set one of thinking budget and thinking level.'
    return responseProblem(contents) ?? signatureProblem(contents)
  }

  function sign(part: Json): void {
    const signature = Buffer.from(`fake-gemini-${tag}-signature-${++counter}`).toString('base64')
    issued.set(signature, partKey(part))
    part.thoughtSignature = signature
  }

  function callParts(body: Json, lastUser: string): Json[] {
    const declarations: Json[] = (body.tools ?? []).flatMap((t: Json) => t.functionDeclarations ?? [])
    const allowed: string[] | undefined = body.toolConfig?.functionCallingConfig?.allowedFunctionNames
    const named = /\[\[call:([A-Za-z0-9_-]+)\]\]/.exec(lastUser)?.[1]
    const first =
      declarations.find((d) => d.name === named && (!allowed || allowed.includes(d.name))) ??
      declarations.find((d) => !allowed || allowed.includes(d.name)) ??
      declarations[0]!
    const names = lastUser.includes('[[parallel]]') ? [first.name, (declarations[1] ?? first).name] : [first.name]
    return names.map((name, i) => ({ functionCall: { name, args: { ...(options.toolInput?.(name) ?? { city: 'Paris' }), ...(i > 0 ? { n: i } : {}) } } }))
  }

  function answer(body: Json, model: string): Json {
    const contents: Json[] = body.contents
    const lastUserAt = contents.findLastIndex((c) => c.role === 'user' && (c.parts as Json[]).some((p) => typeof p.text === 'string'))
    const lastUser = userText(contents[lastUserAt])
    const prompt = promptTokens(body)
    const id = `fake-gemini-${tag}-${answers.length + 1}`
    if (lastUser.includes('[[block:prompt]]')) {
      const blocked = {
        promptFeedback: { blockReason: 'SAFETY', safetyRatings: [{ category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH', blocked: true }] },
        usageMetadata: { promptTokenCount: prompt, totalTokenCount: prompt },
        modelVersion: model,
        responseId: id,
      }
      answers.push(blocked)
      return blocked
    }
    const thinking = body.generationConfig?.thinkingConfig?.thinkingBudget !== 0
    const parts: Json[] = []
    if (thinking && body.generationConfig?.thinkingConfig?.includeThoughts)
      parts.push({ text: `fake-gemini-${tag} thought ${answers.length + 1}`, thought: true })
    const declarations = (body.tools ?? []).flatMap((t: Json) => t.functionDeclarations ?? [])
    const mode = body.toolConfig?.functionCallingConfig?.mode ?? 'AUTO'
    const answered = contents.slice(lastUserAt + 1).some((c) => (c.parts as Json[]).some((p) => p.functionResponse))
    let finishReason = 'STOP'
    if (declarations.length > 0 && mode !== 'NONE' && !answered) {
      const calls = callParts(body, lastUser)
      if (thinking) sign(calls[0]!)
      parts.push(...calls)
    } else {
      const schema = body.generationConfig?.responseJsonSchema
      const lastResponse = contents.flatMap((c) => (c.parts as Json[]).filter((p) => p.functionResponse)).at(-1)
      let text =
        body.generationConfig?.responseMimeType === 'application/json'
          ? JSON.stringify(schema ? sampleOf(schema) : { answer: marker })
          : `${marker}${lastResponse ? ` (the tool said: ${JSON.stringify(lastResponse.functionResponse.response)})` : ''} heard: ${lastUser.slice(-200)}`
      if (lastUser.includes('[[block:answer]]')) {
        text = 'I was about to'
        finishReason = 'SAFETY'
      }
      const part: Json = { text }
      if (thinking) sign(part)
      parts.push(part)
    }
    const thoughts = thinking ? 7 : 0
    const candidates = roughTokens(JSON.stringify(parts.filter((p) => !p.thought).map((p) => p.text ?? p.functionCall)))
    const cached = Math.floor(prompt / 4)
    const usageMetadata = {
      promptTokenCount: prompt,
      candidatesTokenCount: candidates,
      ...(thoughts > 0 ? { thoughtsTokenCount: thoughts } : {}),
      cachedContentTokenCount: cached,
      totalTokenCount: prompt + candidates + thoughts,
    }
    const out = { candidates: [{ content: { role: 'model', parts }, finishReason, index: 0 }], usageMetadata, modelVersion: model, responseId: id }
    answers.push(out)
    return out
  }

  function events(answer: Json): Json[] {
    const base = { modelVersion: answer.modelVersion, responseId: answer.responseId }
    const usage = answer.usageMetadata
    const partial = { promptTokenCount: usage.promptTokenCount, totalTokenCount: usage.promptTokenCount }
    if (!answer.candidates) return [{ ...answer }]
    const candidate = answer.candidates[0]
    const out: Json[] = []
    const event = (parts: Json[], last = false) =>
      out.push({
        ...base,
        candidates: [{ content: { role: 'model', parts }, ...(last ? { finishReason: candidate.finishReason } : {}), index: 0 }],
        usageMetadata: last ? usage : partial,
      })
    let textSignature: string | undefined
    for (const part of candidate.content.parts as Json[]) {
      if (part.functionCall) event([part])
      else if (part.thought) event([part])
      else {
        textSignature = part.thoughtSignature
        for (const piece of pieces(part.text, 3)) event([{ text: piece }])
      }
    }
    event(textSignature ? [{ text: '', thoughtSignature: textSignature }] : [], true)
    // A stream's text signature is issued for the whole text, as the JSON answer's is.
    return out
  }

  function promptTokens(body: Json): number {
    return roughTokens(JSON.stringify([body.systemInstruction ?? null, body.contents, body.tools ?? null]))
  }

  return { problem, answer, events, promptTokens, answers, issued, returned }
}

/** An SSE body of Google's events: `data: <json>` each, no event names, no [DONE] (the stream ends with the body). */
export const googleSse = (events: Json[]): Response =>
  new Response(events.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join(''), { headers: { 'content-type': 'text/event-stream' } })

/** A deterministic vector for a text, `dimensions` long. */
export function fakeVector(text: string, dimensions = 8): number[] {
  const bytes = new Bun.CryptoHasher('sha256').update(text).digest()
  return Array.from({ length: dimensions }, (_, i) => bytes[i % bytes.length]! / 255)
}

export interface FakeGeminiOptions extends GeminiModelOptions {
  /** The key it accepts in `x-goog-api-key` (default `gemini-fake-key`). */
  apiKey?: string
}

export interface FakeGemini {
  /** The base URL an upstream of kind "gemini" takes (with `/v1beta`). */
  url: string
  calls: RecordedCall[]
  model: GeminiModel
  /** The next `count` generate calls fail with this Google error (then it answers again). */
  failNext(count: number, status: number, code: string, message: string, details?: Json[]): void
  /** generateContent and streamGenerateContent calls. */
  generateCalls(): RecordedCall[]
  stop(): void
}

export function fakeGemini(options: FakeGeminiOptions = {}): FakeGemini {
  const apiKey = options.apiKey ?? 'gemini-fake-key'
  const model = geminiModel(options)
  const failures: { status: number; code: string; message: string; details: Json[] }[] = []
  const server = recordingServer((call) => {
    if (new URLSearchParams(call.search).has('key')) return googleError(400, 'INVALID_ARGUMENT', 'the gateway must not send its key in the query string')
    if (call.headers.get('x-goog-api-key') !== apiKey) {
      return googleError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
      ])
    }
    const route = /^\/v1beta\/models\/([^/:]+):(\w+)$/.exec(call.path)
    if (call.method !== 'POST' || !route) return googleError(404, 'NOT_FOUND', `no route ${call.method} ${call.path}`)
    const [, name, method] = route as unknown as [string, string, string]
    const body = call.body as Json
    if (method === 'batchEmbedContents') {
      for (const [i, request] of (body.requests ?? []).entries()) {
        if (request.model !== `models/${name}`) return googleError(400, 'INVALID_ARGUMENT', `requests[${i}].model: must be models/${name}`)
      }
      return Response.json({ embeddings: body.requests.map((r: Json) => ({ values: fakeVector(userText(r.content), r.outputDimensionality ?? 8) })) })
    }
    if (method === 'countTokens') {
      // `contents` alone, or a whole `generateContentRequest` naming the model (never both).
      const inner = body.generateContentRequest ?? (body.contents ? { contents: body.contents } : null)
      if (!inner || (body.generateContentRequest && (inner.model !== `models/${name}` || body.contents))) {
        return googleError(400, 'INVALID_ARGUMENT', 'generateContentRequest.model: must be models/' + name)
      }
      const problem = model.problem(inner)
      return problem ? googleError(400, 'INVALID_ARGUMENT', problem) : Response.json({ totalTokens: model.promptTokens(inner) })
    }
    if (method !== 'generateContent' && method !== 'streamGenerateContent') return googleError(404, 'NOT_FOUND', `no method ${method}`)
    const failure = failures.shift()
    if (failure) return googleError(failure.status, failure.code, failure.message, failure.details)
    const problem = model.problem(body)
    if (problem) return googleError(400, 'INVALID_ARGUMENT', problem)
    const answer = model.answer(body, name)
    if (method === 'generateContent') return Response.json(answer)
    if (new URLSearchParams(call.search).get('alt') !== 'sse') return googleError(400, 'INVALID_ARGUMENT', 'the gateway streams with alt=sse')
    return googleSse(model.events(answer))
  })
  return {
    url: `${server.origin}/v1beta`,
    calls: server.calls,
    model,
    failNext(count, status, code, message, details = []) {
      for (let i = 0; i < count; i++) failures.push({ status, code, message, details })
    },
    generateCalls: () => server.calls.filter((c) => /:(generateContent|streamGenerateContent)$/.test(c.path)),
    stop: server.stop,
  }
}

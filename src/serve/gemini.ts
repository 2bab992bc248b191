import type { GatewayError, Unsupported } from '../errors'
import type { GeminiApi } from '../providers/types'
import type { Target } from '../routing/table'
import { DEFAULT_OUTPUT_TOKENS, estimatedPromptTokens, inputBound } from '../spend/estimate'
import { type AnswerOptions, toGenerateContentResponse } from '../wire/gemini/answer-from-chat'
import { toUsage } from '../wire/gemini/usage'
import { googleErrorBody } from '../wire/gemini/errors'
import { EventsFromChunks, sseChunk } from '../wire/gemini/events-from-chunks'
import { chatCannotServe, droppedFromRequest } from '../wire/gemini/inbound-cannot-serve'
import { SKIP_SIGNATURE } from '../wire/gemini/common'
import { type ToChat, toChatRequest } from '../wire/gemini/request-to-chat'
import type { CountTokensRequest, GenerateContentRequest } from '../wire/gemini/types'
import { type JsonBody, withTopLevelValue } from '../wire/json-text'
import { type ReasoningSealer, SEALED_REASONING_PREFIX } from '../wire/pivot/sealed-reasoning'
import type { ChatRequest } from '../wire/pivot/types'
import { countPivotTokens, countTokensWith } from './count-tokens'
import type { Exchange, ServeCall } from './exchange'
import { relayGeminiEvents, translateGeminiChunks } from './gemini-streams'
import type { ServeDeps } from './serve'

/** What the Gemini-native routes' exchange needs besides the request. */
export interface GeminiContext {
  /** The request's id: a translated answer's `responseId`. */
  requestId: string
  /** Seals the reasoning of translated answers into their thoughtSignature, and opens it on the next turn. */
  sealer: ReasoningSealer
}

/** A target's own generateContent API, when it has one for the target's model. */
export const nativeApi = (target: Target): GeminiApi | null => {
  const api = target.provider.gemini
  return api && (api.serves?.(target.model) ?? true) ? api : null
}

const SEALED_SIGNATURE = new RegExp(`"thoughtSignature"(\\s*:\\s*)"${SEALED_REASONING_PREFIX.replace('.', '\\.')}[A-Za-z0-9_-]*"`, 'g')

/**
 * The caller's text for a Gemini or Vertex AI target, as sent: its model is the URL's. Signatures
 * this gateway sealed (turns another kind of target answered) mean nothing to Gemini: each becomes
 * Google's documented stand-in for history from elsewhere, `skip_thought_signature_validator`.
 */
export function nativeBody(body: JsonBody | undefined, request: object): string {
  const text = body?.text ?? JSON.stringify(request)
  return text.includes(`"${SEALED_REASONING_PREFIX}`) ? text.replace(SEALED_SIGNATURE, `"thoughtSignature"$1"${SKIP_SIGNATURE}"`) : text
}

/** A reasoning token for a target: signed thinking only for a target of the kind that made it, else just its text. */
const unsealFor = (sealer: ReasoningSealer, kind: string) => (token: string) => {
  const reasoning = sealer.unseal(token)
  return reasoning && reasoning.origin !== kind ? { origin: reasoning.origin, reasoning_content: reasoning.reasoning_content } : reasoning
}

const NONE: readonly string[] = []

/** One request's translations, per target (what a signature opens to depends on the target's kind). */
function translator(request: GenerateContentRequest, stream: boolean, sealer: ReasoningSealer) {
  const done = new Map<Target, ToChat>()
  return (target: Target): ToChat => {
    let chat = done.get(target)
    if (!chat) {
      chat = toChatRequest(request, target.model, stream, { maxEffort: target.upstream.maxReasoningEffort, unseal: unsealFor(sealer, target.upstream.kind) })
      done.set(target, chat)
    }
    return chat
  }
}

/** The reason a translated target cannot serve the request, or null. */
const translatedCannotServe = (request: GenerateContentRequest, target: Target, chat: () => ChatRequest): Unsupported | null =>
  chatCannotServe(request) ?? target.provider.cannotServe?.(chat()) ?? null

/**
 * Google's generateContent API (`:generateContent`, `:streamGenerateContent?alt=sse`), served by any
 * target: Gemini and Vertex AI targets get the caller's own text (its model is the URL's) and answer
 * as they do, `modelVersion` made the alias; every other target goes through the pivot
 * (src/wire/gemini), its reasoning sealed in the answer's thoughtSignature for the next turn.
 */
export function geminiExchange(alias: string, request: GenerateContentRequest, body: JsonBody | undefined, stream: boolean, context: GeminiContext): Exchange {
  const translate = translator(request, stream, context.sealer)
  const text = () => body?.text ?? JSON.stringify(request)
  const answerOptions = (target: Target): AnswerOptions => ({
    responseId: context.requestId,
    includeThoughts: request.generationConfig?.thinkingConfig?.includeThoughts === true,
    origin: target.upstream.kind,
    seal: context.sealer.seal,
  })
  return {
    model: alias,
    cannotServe: (target) => (nativeApi(target) ? null : translatedCannotServe(request, target, () => translate(target).chat)),
    dropped: (target) => (nativeApi(target) ? NONE : [...droppedFromRequest(request), ...(translate(target).foreignSignatures ? ['thoughtSignature'] : [])]),
    async complete(target, attempt) {
      const api = nativeApi(target)
      if (api) {
        const { text: answer, response } = await api.generateContent(target.model, nativeBody(body, request), attempt)
        const named =
          typeof response.modelVersion === 'string'
            ? withTopLevelValue(answer, 'modelVersion', JSON.stringify(response.modelVersion), JSON.stringify(alias))
            : null
        return { body: named ?? JSON.stringify({ ...response, modelVersion: alias }), usage: toUsage(response.usageMetadata) }
      }
      const { completion } = await target.provider.complete(translate(target).chat, attempt)
      return { body: JSON.stringify(toGenerateContentResponse(completion, alias, answerOptions(target))), usage: completion.usage ?? null }
    },
    stream: stream
      ? {
          async open(target, attempt) {
            const api = nativeApi(target)
            if (api) return relayGeminiEvents(await api.streamGenerateContent(target.model, nativeBody(body, request), attempt), alias)
            const events = new EventsFromChunks(alias, answerOptions(target))
            return translateGeminiChunks(await target.provider.stream(translate(target).chat, attempt), events)
          },
          // A broken stream ends with an error chunk, as Google's does; the SDK throws it as an ApiError.
          failureEvent: (error: GatewayError) => sseChunk(googleErrorBody(error)),
          estimatedPromptTokens: () => estimatedPromptTokens(text()),
        }
      : null,
    tokenBound: () => ({ inputTokens: inputBound(text()), outputTokens: request.generationConfig?.maxOutputTokens ?? DEFAULT_OUTPUT_TOKENS }),
  }
}

/** The request a countTokens body counts: the Gemini API's `generateContentRequest` wrapper, or its members directly. */
export const countedRequest = (request: CountTokensRequest): GenerateContentRequest => (request.generateContentRequest ?? request) as GenerateContentRequest

const COUNT_MODEL = /("model"\s*:\s*)"(?:[^"\\]|\\.)*"/

/** The caller's countTokens text for a Gemini or Vertex AI target: a wrapper's `model` made the target's. */
function nativeCountBody(body: JsonBody | undefined, request: CountTokensRequest, model: string): string {
  const text = nativeBody(body, request)
  if (!request.generateContentRequest?.model) return text
  const wrapper = body?.outline.members?.get('generateContentRequest')
  if (!wrapper) return JSON.stringify({ ...request, generateContentRequest: { ...request.generateContentRequest, model: `models/${model}` } })
  const inner = text.slice(wrapper.valueStart, wrapper.valueEnd)
  const replaced = withTopLevelValue(inner, 'model', JSON.stringify(request.generateContentRequest.model), JSON.stringify(`models/${model}`))
  return text.slice(0, wrapper.valueStart) + (replaced ?? inner.replace(COUNT_MODEL, `$1${JSON.stringify(`models/${model}`)}`)) + text.slice(wrapper.valueEnd)
}

/**
 * `:countTokens`: Gemini and Vertex AI targets count it themselves (the caller's text); Anthropic
 * targets with their own counter (the request translated to a Messages request); the others
 * locally (OpenAI-kind with the o200k tokenizer, the mock in words). Limited like any request, not
 * counted in usage (src/serve/count-tokens.ts).
 */
export async function geminiCountTokens(
  deps: ServeDeps,
  call: ServeCall,
  alias: string,
  request: CountTokensRequest,
  body: JsonBody | undefined,
): Promise<string> {
  const counted = countedRequest(request)
  const chat = (target: Target) => toChatRequest(counted, target.model, false, { maxEffort: target.upstream.maxReasoningEffort, unseal: () => null }).chat
  let details: Record<string, unknown> = {}
  const total = await countTokensWith(deps, call, {
    model: alias,
    cannotCount(target) {
      if (nativeApi(target) || target.provider.messages) return translatedCannotServeOrNull(counted, target, chat)
      if (!target.provider.countTokens)
        return { code: 'unsupported_parameter', param: 'model', message: `The upstream "${target.upstream.name}" cannot count tokens` }
      return translatedCannotServe(counted, target, () => chat(target))
    },
    async count(target, attempt) {
      const api = nativeApi(target)
      if (api) {
        const { totalTokens, ...rest } = await api.countTokens(target.model, nativeCountBody(body, request, target.model), attempt)
        details = rest
        return totalTokens
      }
      return countPivotTokens(target, chat(target), attempt)
    },
  })
  call.headers['content-type'] = 'application/json'
  return JSON.stringify({ totalTokens: total, ...details })
}

/** A native target counts anything; an Anthropic one what translates. */
function translatedCannotServeOrNull(request: GenerateContentRequest, target: Target, chat: (target: Target) => ChatRequest): Unsupported | null {
  if (nativeApi(target)) return null
  return translatedCannotServe(request, target, () => chat(target))
}

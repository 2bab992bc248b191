import type { PreviousResponse, ResponsesStore } from '../conversations/responses'
import { type GatewayError, type Unsupported, unsupported } from '../errors'
import type { Alias, Target } from '../routing/table'
import { DEFAULT_OUTPUT_TOKENS, estimatedPromptTokens, inputBound } from '../spend/estimate'
import { applyEdits, type JsonBody, replacement } from '../wire/json-text'
import { toResponse } from '../wire/openai-responses/answer-from-chat'
import { chatCannotServe, gatewayRefuses, hostedToolRefused } from '../wire/openai-responses/cannot-serve'
import { EventsFromChunks, sseEvent } from '../wire/openai-responses/events-from-chunks'
import { inputItems } from '../wire/openai-responses/input-to-messages'
import { type ToChat, toChatRequest } from '../wire/openai-responses/request-to-chat'
import type { InputItem, Response, ResponsesRequest } from '../wire/openai-responses/types'
import { type ReasoningSealer, SEALED_REASONING_PREFIX, type SealedReasoning } from '../wire/pivot/sealed-reasoning'
import type { ChatRequest, Usage } from '../wire/pivot/types'
import { chunksOfCompletion, completionOfResponse } from '../cache/chunks'
import type { Exchange } from './exchange'
import { relayResponseEvents, usageOfResponse, withAliasModel } from './responses-native'
import { responseEventsFromChunks } from './responses-streams'

/** What the Responses API's exchange needs besides the request. */
export interface ResponsesContext {
  /** The key the request came with: what it stores, only it can read. */
  keyId: string
  sealer: ReasoningSealer
  store: ResponsesStore
  /** Whether the gateway replaced the request's input (its item references looked up): it is then no longer the text it was sent as. */
  inputReplaced: boolean
  /** The conversation `previous_response_id` names, resolved before serving; null: none. */
  previous: PreviousResponse | null
  /** ms since the epoch. */
  now(): number
  /** Told when a response could not be kept: the answer stands, a later previous_response_id gets 404. */
  onRecordError(error: unknown): void
}

const NONE: readonly string[] = []

/** What no target serves (`background`, `conversation`): refused before anything else, naming the field. */
export function checkResponsesRequest(request: ResponsesRequest): void {
  const refused = gatewayRefuses(request)
  if (refused) throw unsupported(refused)
}

/** Hosted tools a target runs itself: all of them on a native target, web search on Anthropic (its server tool). */
const runsHosted = (target: Target, type: string) => target.provider.responses !== undefined || (type === 'web_search' && target.upstream.kind === 'anthropic')

/** A reasoning token for a target: signed thinking only for a target of the kind that made it, else just its text. */
const unsealFor = (sealer: ReasoningSealer, kind: string) => (token: string) => {
  const reasoning = sealer.unseal(token)
  return reasoning && reasoning.origin !== kind ? { origin: reasoning.origin, reasoning_content: reasoning.reasoning_content } : reasoning
}

/** The history for a native target that does not hold the conversation: the items as sent, less reasoning only this gateway can open. */
const nativeHistory = (history: InputItem[]) =>
  history.filter(
    (item) => !(item.type === 'reasoning' && String((item as { encrypted_content?: unknown }).encrypted_content ?? '').startsWith(SEALED_REASONING_PREFIX)),
  )

/**
 * The body a native target gets: the caller's text with only `model` replaced; when the gateway
 * holds the conversation `previous_response_id` names, the request with that history as its first
 * input items instead (the upstream knows no such id).
 */
export function nativeRequestText(request: ResponsesRequest, body: JsonBody | undefined, model: string, previous: PreviousResponse | null): string {
  const member = body?.outline.members?.get('model')
  if (previous?.at !== 'gateway' && body && member) return applyEdits(body.text, [replacement(member, JSON.stringify(model))])
  if (previous?.at !== 'gateway') return JSON.stringify({ ...request, model })
  return JSON.stringify({ ...request, model, input: [...nativeHistory(previous.history), ...inputItems(request.input)], previous_response_id: undefined })
}

/** A conversation an upstream holds is continued there only: every other target is refused, naming previous_response_id. */
export function heldElsewhere(target: Target, previous: PreviousResponse | null): Unsupported | null {
  if (previous?.at !== 'upstream' || (target.provider.responses !== undefined && target.upstream.name === previous.upstream)) return null
  return {
    code: 'unsupported_parameter',
    param: 'previous_response_id',
    message: `Upstream "${target.upstream.name}" does not hold response "${previous.id}"`,
  }
}

/** Anthropic's web search, from the Responses API's hosted web_search tool: the pivot's web_search_options. */
function withWebSearch(chat: ChatRequest, tool: Record<string, unknown>): ChatRequest {
  const options: Record<string, unknown> = {}
  if (tool.search_context_size !== undefined) options.search_context_size = tool.search_context_size
  if (tool.user_location !== undefined) options.user_location = tool.user_location
  return { ...chat, web_search_options: options }
}

/** One Responses request's translations, bodies and keeping, per target: what its exchange is made of. */
function responsesTurn(request: ResponsesRequest, body: JsonBody | undefined, context: ResponsesContext) {
  const { previous, sealer } = context
  const alias = request.model
  // Time-ordered (UUIDv7): the conversation store's primary key takes new responses at its end, not at random pages.
  const id = `resp_${Bun.randomUUIDv7().replaceAll('-', '')}`
  const createdAt = Math.floor(context.now() / 1000)
  const history = previous?.at === 'gateway' ? previous.history : []
  const includeEncrypted = request.include?.includes('reasoning.encrypted_content') ?? false
  const translations = new Map<Target, ToChat>()
  const translate = (target: Target): ToChat => {
    let done = translations.get(target)
    if (!done) {
      const unseal = unsealFor(sealer, target.upstream.kind)
      done = toChatRequest(request, target.model, { maxEffort: target.upstream.maxReasoningEffort, history, unseal })
      const search = done.hosted.find((hosted) => hosted.type === 'web_search')
      if (search && target.upstream.kind === 'anthropic') done = { ...done, chat: withWebSearch(done.chat, search.tool as Record<string, unknown>) }
      translations.set(target, done)
    }
    return done
  }
  const keep = (work: () => Promise<boolean>) =>
    request.store === false
      ? Promise.resolve()
      : work().then(
          () => {},
          (error: unknown) => context.onRecordError(error),
        )
  return {
    alias,
    history,
    translate,
    /** Hosted tools of the request this target cannot run. */
    unrun: (target: Target) => translate(target).hosted.filter((hosted) => !runsHosted(target, hosted.type)),
    /** How the answer is named and sealed; without a target (a cached answer), for no upstream and the request's own tool names. */
    answerOptions: (target: Target | null) => ({
      id,
      createdAt,
      completedAt: Math.floor(context.now() / 1000),
      seal: (reasoning: SealedReasoning) => sealer.seal(reasoning),
      origin: target?.upstream.kind ?? 'cache',
      includeEncrypted,
      names: target ? translate(target).names : undefined,
    }),
    /** The caller's text for a native target, model replaced; rebuilt when the gateway holds the conversation. */
    nativeBody: (target: Target): string => nativeRequestText(request, body, target.model, previous),
    keepNative: (target: Target, responseId: unknown) =>
      typeof responseId === 'string'
        ? keep(() => context.store.keepNative({ keyId: context.keyId, id: responseId }, previous?.id ?? null, target.upstream.name, alias))
        : Promise.resolve(),
    keepTranslated: (response: Response, output: Parameters<ResponsesStore['keepTranslated']>[4]) =>
      keep(() => context.store.keepTranslated({ keyId: context.keyId, id }, previous?.id ?? null, inputItems(request.input), response, output)),
  }
}

/**
 * A cached Response as this request's own: made again from the pivot, as a translated target's
 * answer is (its own id and timestamps, the same output and usage), and kept like one unless
 * `store` is false, so previous_response_id, GET and input_items work on it.
 */
function cachedAnswer(request: ResponsesRequest, turn: ReturnType<typeof responsesTurn>) {
  return async (answer: string, usage: Usage | null, stream: boolean): Promise<string> => {
    const completion = completionOfResponse(JSON.parse(answer) as Record<string, unknown>, usage)
    if (!stream) {
      const { response, history } = toResponse(completion, request, turn.answerOptions(null))
      await turn.keepTranslated(response, history)
      return JSON.stringify(response)
    }
    const events = new EventsFromChunks(request, turn.answerOptions(null))
    const chunks = chunksOfCompletion(completion, usage)
    const text = [...events.start(), ...chunks.flatMap((chunk) => events.push(chunk)), ...events.end()].map(sseEvent).join('')
    if (events.response) await turn.keepTranslated(events.response, events.history)
    return text
  }
}

/**
 * OpenAI's Responses API, served by any target: native ones (an openai-kind upstream with
 * `responses = "native"`) get the caller's own text; every other goes through the pivot
 * (wire/openai-responses). Stored responses (`store` not false) are kept for previous_response_id,
 * GET, DELETE and input_items; a native one by the upstream that holds it.
 */
export function responsesExchange(request: ResponsesRequest, body: JsonBody | undefined, context: ResponsesContext): Exchange {
  const { previous } = context
  const turn = responsesTurn(request, body, context)
  let hostedTools: Alias['hostedTools'] = 'drop'
  let failure: ((error: GatewayError) => string) | null = null
  return {
    model: turn.alias,
    checkAlias(resolved) {
      hostedTools = resolved.hostedTools
    },
    cannotServe(target): Unsupported | null {
      const held = heldElsewhere(target, previous)
      if (held) return held
      if (target.provider.responses !== undefined) return null
      const refused = chatCannotServe(request, turn.history)
      if (refused) return refused
      const missing = turn.unrun(target)
      if (hostedTools === 'refuse' && missing.length > 0) return hostedToolRefused(missing[0]!)
      return target.provider.cannotServe?.(turn.translate(target).chat) ?? null
    },
    dropped: (target) => (target.provider.responses ? NONE : [...turn.translate(target).dropped, ...turn.unrun(target).map((hosted) => hosted.type)]),
    async complete(target, attempt) {
      const native = target.provider.responses
      if (native) {
        const { text, response } = await native.create(turn.nativeBody(target), attempt)
        const kept = turn.keepNative(target, response.id)
        return { body: withAliasModel(text, response, turn.alias), usage: usageOfResponse(response.usage as never), kept }
      }
      const { completion } = await target.provider.complete(turn.translate(target).chat, attempt)
      const { response, history: output } = toResponse(completion, request, turn.answerOptions(target))
      const kept = turn.keepTranslated(response, output)
      return { body: JSON.stringify(response), usage: completion.usage ?? null, kept }
    },
    stream:
      request.stream === true
        ? {
            async open(target, attempt) {
              const native = target.provider.responses
              if (native) {
                const relay = await relayResponseEvents(await native.stream(turn.nativeBody(target), attempt), turn.alias, (response) =>
                  turn.keepNative(target, response?.id),
                )
                failure = (error) => relay.failure(error)
                return relay.stream
              }
              const events = new EventsFromChunks(request, turn.answerOptions(target))
              failure = (error) => events.fail(error).map(sseEvent).join('')
              const iterator = await target.provider.stream({ ...turn.translate(target).chat, stream: true }, attempt)
              return responseEventsFromChunks(iterator, events, () =>
                events.response ? turn.keepTranslated(events.response, events.history) : Promise.resolve(),
              )
            },
            // A broken stream ends with response.failed, and never a response.completed.
            failureEvent: (error: GatewayError) => failure?.(error) ?? '',
            estimatedPromptTokens: () => estimatedPromptTokens(body?.text ?? JSON.stringify(request)),
          }
        : null,
    tokenBound: () => ({
      inputTokens: inputBound(body?.text ?? JSON.stringify(request)) + inputBound(JSON.stringify(turn.history)),
      outputTokens: request.max_output_tokens ?? DEFAULT_OUTPUT_TOKENS,
    }),
    // A conversation an upstream holds goes on there only: never answered from the cache. A request
    // whose input the gateway replaced is keyed by what it became, never by its text as sent.
    cache: previous?.at === 'upstream' ? undefined : { request, text: context.inputReplaced ? undefined : body?.text, fromCache: cachedAnswer(request, turn) },
  }
}

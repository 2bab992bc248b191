import { type PreviousResponse, responseNotFound, type ResponsesStore } from '../conversations/responses'
import { type Unsupported, unsupported } from '../errors'
import type { ResponsesApi } from '../providers/types'
import type { RoutingTable, Target } from '../routing/table'
import type { JsonBody } from '../wire/json-text'
import { visibleItems } from '../wire/openai-responses/answer-from-chat'
import { chatCannotServe, gatewayRefuses } from '../wire/openai-responses/cannot-serve'
import { toChatRequest } from '../wire/openai-responses/request-to-chat'
import type { InputItem, OutputItem, ResponsesRequest } from '../wire/openai-responses/types'
import { countPivotTokens, countTokensWith } from './count-tokens'
import type { ServeCall } from './exchange'
import { heldElsewhere, nativeRequestText } from './responses'
import { withAliasModel } from './responses-native'
import type { ServeDeps } from './serve'

/** How long a call to the upstream holding a stored response may take. */
const STORED_CALL_TIMEOUT_MS = 30_000

/** What the stored-response routes need: the store, the routing in force, and the caller's key. */
export interface StoredResponses {
  store: ResponsesStore
  routing(): RoutingTable
  keyId: string
  /** Fires when the caller leaves: a call to an upstream is then given up. */
  signal: AbortSignal
}

/** The native Responses API of the upstream that holds a stored response; a 404 once that upstream is gone from the config. */
function holder(context: StoredResponses, upstream: string, id: string): ResponsesApi {
  const api = context.routing().providers.get(upstream)?.responses
  if (!api) throw responseNotFound(id)
  return api
}

/** One call to a holding upstream, bounded in time and given up if the caller leaves. */
const attemptFor = (signal: AbortSignal) => ({ signal: AbortSignal.any([signal, AbortSignal.timeout(STORED_CALL_TIMEOUT_MS)]), responded: () => {} })

/** `GET /v1/responses/{id}`: the stored Response (items as `include` asks), or the holding upstream's, model the alias. */
export async function retrieveResponse(context: StoredResponses, id: string, include: readonly string[], query: string): Promise<string> {
  const found = await context.store.find({ keyId: context.keyId, id })
  if (!found) throw responseNotFound(id)
  if (found.at === 'gateway') return JSON.stringify({ ...found.response, output: visibleItems(found.output, include.includes('reasoning.encrypted_content')) })
  const text = await holder(context, found.upstream, id).call('GET', `${encodeURIComponent(id)}${query}`, null, attemptFor(context.signal))
  return withAliasModel(text, JSON.parse(text) as Record<string, unknown>, found.alias)
}

/** `DELETE /v1/responses/{id}`: forgotten here, and at the holding upstream. */
export async function deleteResponse(context: StoredResponses, id: string): Promise<string> {
  const ref = { keyId: context.keyId, id }
  const found = await context.store.find(ref)
  if (!found) throw responseNotFound(id)
  if (found.at === 'upstream') await holder(context, found.upstream, id).call('DELETE', encodeURIComponent(id), null, attemptFor(context.signal))
  await context.store.delete(ref)
  return JSON.stringify({ id, object: 'response', deleted: true })
}

export interface ItemsPage {
  after?: string
  limit: number
  order: 'asc' | 'desc'
}

/** Item types whose resource shape carries a `status` (FunctionToolCallResource and the like). */
const WITH_STATUS = new Set(['function_call', 'function_call_output', 'custom_tool_call', 'custom_tool_call_output'])

/** A message's parts as the document lists them: text parts typed, output text with its annotations and logprobs, images with a detail. */
function messageParts(role: string, content: unknown): unknown[] {
  const assistant = role === 'assistant'
  if (typeof content === 'string')
    return [assistant ? { type: 'output_text', text: content, annotations: [], logprobs: [] } : { type: 'input_text', text: content }]
  return ((content ?? []) as Record<string, unknown>[]).map((part) => {
    if (part.type === 'output_text' || (assistant && part.type === 'input_text'))
      return { ...part, type: 'output_text', annotations: part.annotations ?? [], logprobs: part.logprobs ?? [] }
    if (part.type === 'input_image') return { ...part, detail: part.detail ?? 'auto' }
    return part
  })
}

/**
 * A stored input item as the list shows it (ItemResource in OpenAI's document): with an id (its own,
 * else one made from the turn that sent it and its place there), messages typed with their parts as
 * lists and a status, calls and their outputs with a status.
 */
function itemResource(item: InputItem, index: number, responseId: string): InputItem & { id: string } {
  const raw = item as unknown as Record<string, unknown>
  const id = typeof raw.id === 'string' ? raw.id : `in_${responseId.replace(/^resp_/, '')}_${index}`
  if (raw.type === undefined || raw.type === 'message') {
    const role = String(raw.role)
    return { ...raw, id, type: 'message', role, status: raw.status ?? 'completed', content: messageParts(role, raw.content) } as unknown as InputItem & {
      id: string
    }
  }
  return { ...raw, id, ...(WITH_STATUS.has(String(raw.type)) ? { status: raw.status ?? 'completed' } : {}) } as unknown as InputItem & { id: string }
}

/**
 * `GET /v1/responses/{id}/input_items`: the items the response was made from, as OpenAI lists them:
 * every earlier turn's input and output items (previous_response_id), then its own input; a page at
 * a time (OpenAI's list shape), reasoning's encrypted_content only when `include` asks for it.
 */
export async function listInputItems(context: StoredResponses, id: string, page: ItemsPage, query: string, include: readonly string[]): Promise<string> {
  const found = await context.store.find({ keyId: context.keyId, id })
  if (!found) throw responseNotFound(id)
  if (found.at === 'upstream')
    return holder(context, found.upstream, id).call('GET', `${encodeURIComponent(id)}/input_items${query}`, null, attemptFor(context.signal))
  const turns = await context.store.turns({ keyId: context.keyId, id })
  if (!turns) throw responseNotFound(id)
  const made = turns.flatMap((turn, n) => [
    ...turn.input.map((item, i) => itemResource(item, i, turn.id)),
    ...(n < turns.length - 1 ? (turn.output as (InputItem & { id: string })[]) : []),
  ])
  const items = visibleItems(made as OutputItem[], include.includes('reasoning.encrypted_content')) as (InputItem & { id: string })[]
  if (page.order === 'desc') items.reverse()
  const from = page.after === undefined ? 0 : items.findIndex((item) => item.id === page.after) + 1
  const data = items.slice(from, from + page.limit)
  return JSON.stringify({ object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: from + page.limit < items.length })
}

/** Why a target cannot count a Responses request's input (with the conversation it continues), or null. */
function cannotCount(target: Target, request: ResponsesRequest, previous: PreviousResponse | null): Unsupported | null {
  const held = heldElsewhere(target, previous)
  if (held) return held
  if (target.provider.responses) return null
  const refused = chatCannotServe(request, previous?.at === 'gateway' ? previous.history : [])
  if (refused) return refused
  if (target.provider.countTokens || target.provider.messages) return null
  return { code: 'unsupported_parameter', param: 'model', message: `The upstream "${target.upstream.name}" cannot count tokens` }
}

/**
 * `POST /v1/responses/input_tokens`: a native target counts it itself; others count the request as
 * translated for them (the o200k tokenizer, Anthropic's own count, the mock's words). With
 * `previous_response_id`, the conversation it continues counts too: rebuilt when the gateway holds
 * it, counted by the upstream that holds it otherwise. Limited and released like count_tokens: no
 * request in usage.
 */
export async function countResponseInputTokens(
  deps: ServeDeps,
  call: ServeCall,
  request: ResponsesRequest,
  body: JsonBody | undefined,
  previous: PreviousResponse | null,
): Promise<string> {
  const refused = gatewayRefuses(request)
  if (refused) throw unsupported(refused)
  const history = previous?.at === 'gateway' ? previous.history : []
  const counted = await countTokensWith(deps, call, {
    model: request.model,
    cannotCount: (target) => cannotCount(target, request, previous),
    async count(target, attempt) {
      const native = target.provider.responses
      if (native) {
        const text = nativeRequestText(request, body, target.model, previous)
        return (JSON.parse(await native.call('POST', 'input_tokens', text, attempt)) as { input_tokens: number }).input_tokens
      }
      const { chat } = toChatRequest(request, target.model, { maxEffort: target.upstream.maxReasoningEffort, history, unseal: () => null })
      return countPivotTokens(target, chat, attempt)
    },
  })
  call.headers['content-type'] = 'application/json'
  return JSON.stringify({ object: 'response.input_tokens', input_tokens: counted })
}

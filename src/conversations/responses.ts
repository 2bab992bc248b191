/**
 * Stored Responses API responses (`store` not false, OpenAI's default): what `previous_response_id`,
 * GET, DELETE and input_items read. A translated response keeps its input items and its output items
 * (reasoning sealed), so a next turn is rebuilt as the whole conversation; a native one keeps only
 * the upstream that holds it, so the next turn, GET and DELETE go there. No I/O besides the store.
 */
import { notFound } from '../errors'
import { responseIdOfItem } from '../wire/openai-responses/common'
import type { InputItem, OutputItem, Response } from '../wire/openai-responses/types'
import { type ConversationStore, expiryOf, type RecordRef } from './store'

/** What a translated response's record keeps of its request: the input items of that turn. */
interface StoredInput {
  input: InputItem[]
}

/**
 * What a translated response's record keeps of its answer: the Response as given, less its output
 * (a GET shows the items below as its own `include` asks; records kept before kept it as well), and
 * its items with reasoning sealed.
 */
interface StoredOutput {
  response: Response
  output: OutputItem[]
}

/** A native response's record: the alias it was asked through (what GET shows as its model). */
interface StoredNative {
  alias: string
}

/** Where the conversation a `previous_response_id` names is held. */
export type PreviousResponse =
  | { at: 'upstream'; upstream: string; id: string }
  | { at: 'gateway'; id: string; /** Every earlier turn's input and output items, oldest first. */ history: InputItem[] }

/** A stored response as a read finds it (a translated one's items are in `output`, not in its `response`). */
export type StoredResponse =
  { at: 'upstream'; upstream: string; alias: string } | { at: 'gateway'; response: Response; input: InputItem[]; output: OutputItem[] }

export interface ResponsesStoreOptions {
  now: () => number
  /** How long a response is kept (`[conversations] responses_ttl_days`), read at each write. */
  ttlMs: () => number
}

/** 404 for a response this key has no access to: missing, another key's, expired. */
export const responseNotFound = (id: string, param?: string) =>
  notFound(`No response found with id "${id}"`, { code: param ? 'previous_response_not_found' : 'response_not_found', param })

const isReference = (item: InputItem): boolean => (item as { type?: unknown }).type === 'item_reference' && typeof (item as { id?: unknown }).id === 'string'

export class ResponsesStore {
  constructor(
    private readonly store: ConversationStore,
    private readonly options: ResponsesStoreOptions,
  ) {}

  /** The conversation a new turn continues; a 404 naming `previous_response_id` when this key has none by that id. */
  async previous(id: string, keyId: string): Promise<PreviousResponse> {
    const ref = { keyId, id }
    const now = this.options.now()
    const head = await this.store.head(ref, now)
    if (head === null || head.kind !== 'response') throw responseNotFound(id, 'previous_response_id')
    if (head.upstream !== null) return { at: 'upstream', upstream: head.upstream, id }
    const chain = await this.store.chain(ref, now)
    if (chain === null) throw responseNotFound(id, 'previous_response_id')
    const history: InputItem[] = []
    for (const record of chain) history.push(...(record.request as StoredInput).input, ...((record.answer as StoredOutput).output as InputItem[]))
    return { at: 'gateway', id, history }
  }

  /**
   * The input with each `item_reference` to an item of a response this key holds here replaced by
   * that item (reasoning sealed as stored), as OpenAI resolves them: clients that store (the Vercel
   * AI SDK) send earlier items by reference. A reference to anything else (an upstream's item, an
   * unknown id) is left as sent: a native target resolves its own, a translated one refuses it.
   */
  async withReferencesResolved(input: string | InputItem[] | undefined, keyId: string): Promise<string | InputItem[] | undefined> {
    if (!Array.isArray(input) || !input.some(isReference)) return input
    const outputs = new Map<string, OutputItem[] | null>()
    const resolved: InputItem[] = []
    for (const item of input) {
      const responseId = isReference(item) ? responseIdOfItem((item as { id: string }).id) : null
      if (responseId === null) {
        resolved.push(item)
        continue
      }
      if (!outputs.has(responseId)) {
        const found = await this.find({ keyId, id: responseId })
        outputs.set(responseId, found?.at === 'gateway' ? found.output : null)
      }
      const target = outputs.get(responseId)?.find((output) => (output as { id?: string }).id === (item as { id: string }).id)
      resolved.push(target ? (target as InputItem) : item)
    }
    return resolved
  }

  /** Keeps a translated response: its input items and its output items (reasoning sealed). */
  async keepTranslated(ref: RecordRef, parentId: string | null, input: InputItem[], response: Response, output: OutputItem[]): Promise<boolean> {
    const request: StoredInput = { input }
    const answer: StoredOutput = { response: { ...response, output: [] }, output }
    return this.put(ref, parentId, null, request, answer)
  }

  /** Keeps which upstream holds a native response, and the alias it was asked through. */
  async keepNative(ref: RecordRef, parentId: string | null, upstream: string, alias: string): Promise<boolean> {
    const request: StoredNative = { alias }
    return this.put(ref, parentId, upstream, request, null)
  }

  private put(ref: RecordRef, parentId: string | null, upstream: string | null, request: unknown, answer: unknown): Promise<boolean> {
    const createdAt = this.options.now()
    return this.store.put({ ...ref, kind: 'response', parentId, upstream, request, answer, createdAt, expiresAt: expiryOf(createdAt, this.options.ttlMs()) })
  }

  /** The turns that led to a response the gateway holds, first to last (its own included); null when this key has none whole by that id. */
  async turns(ref: RecordRef): Promise<{ id: string; input: InputItem[]; output: OutputItem[] }[] | null> {
    const chain = await this.store.chain(ref, this.options.now())
    if (chain === null || chain.some((record) => record.kind !== 'response' || record.upstream !== null)) return null
    return chain.map((record) => ({ id: record.id, input: (record.request as StoredInput).input, output: (record.answer as StoredOutput).output }))
  }

  /** A stored response for GET, DELETE and input_items; null when this key has none by that id. */
  async find(ref: RecordRef): Promise<StoredResponse | null> {
    const record = await this.store.get(ref, this.options.now())
    if (record === null || record.kind !== 'response') return null
    if (record.upstream !== null) return { at: 'upstream', upstream: record.upstream, alias: (record.request as StoredNative).alias }
    const { response, output } = record.answer as StoredOutput
    return { at: 'gateway', response, input: (record.request as StoredInput).input, output }
  }

  delete(ref: RecordRef): Promise<boolean> {
    return this.store.delete(ref)
  }
}

/**
 * Anthropic message threads (docs/threads.md): `thread: {type: "create"}` asks that the conversation
 * be held under the answer's id, `{type: "continue", previous_message_id}` sends only the new turn.
 * Anthropic targets hold their threads themselves; for every other target the gateway holds them in
 * the conversation store and sends the full history. No I/O here besides the store passed in.
 */
import { type GatewayError, internalError, invalidRequest, notFound } from '../errors'
import type { ContentBlock, MessagesRequest } from '../wire/anthropic/types'
import { type ConversationStore, expiryOf, type RecordRef, type StoredRecord } from './store'

/** The `anthropic-beta` value the SDK sends with every thread request (SDK 1.12.0 to 1.14.0). */
export const MESSAGE_THREADS_BETA = 'message-threads-2026-08-12'

export type ThreadParam = { type: 'create' } | { type: 'continue'; previous_message_id: string }

type Messages = MessagesRequest['messages']

/** What a thread turn the gateway holds keeps of its request: only the first turn has system and tools. */
interface HeldRequest {
  system?: MessagesRequest['system']
  tools?: MessagesRequest['tools']
  messages: Messages
}

/** An answer as the thread records it: its id (what the next turn continues from) and its content. */
export interface ThreadAnswer {
  id: string
  content: ContentBlock[]
}

/** The fields a thread keeps from its first turn: a continue may leave them out or repeat them unchanged. */
const CREATE_ONLY = ['system', 'tools'] as const

/** Ids are opaque, but a hostile one must not cost a large read. */
const MAX_ID_LENGTH = 256

const REPLAY = 'Replay the full conversation with `thread: {"type": "create"}` to start a new thread.'
const PARAM = 'thread.previous_message_id'

/** 404: no thread the caller's key may continue from that id (missing, another key's, expired, or not reachable). */
export const threadNotFound = (id: string, why = 'No thread was found for') =>
  notFound(`${why} previous_message_id "${id}". ${REPLAY}`, { code: 'thread_not_found', param: PARAM })

/** 400: every answer can be continued once, and this one was. */
export const threadAlreadyContinued = (id: string) =>
  invalidRequest(`The message "${id}" has already been continued; continue from the thread's most recent message id. ${REPLAY}`, {
    code: 'thread_already_continued',
    param: PARAM,
  })

/** 400: another request is continuing from the same message right now. */
export const threadContinueInFlight = (id: string) =>
  invalidRequest(`Another request is still continuing from "${id}"; wait for it and continue from its message id, or replay. ${REPLAY}`, {
    code: 'thread_continue_in_flight',
    param: PARAM,
  })

/** 400: a field the thread keeps from its first turn was sent again with another value. */
export const threadFingerprintMismatch = (fields: readonly string[]) =>
  invalidRequest(
    `${fields.map((f) => `\`${f}\``).join(' and ')} differ${fields.length === 1 ? 's' : ''} from the value the thread was created with: ` +
      'send it unchanged or leave it out. To change it, replay the full conversation with `thread: {"type": "create"}`.',
    { code: 'thread_fingerprint_mismatch', param: fields[0] },
  )

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** The request's `thread`, checked; null when it has none. */
export function threadOf(request: MessagesRequest): ThreadParam | null {
  const thread = request.thread
  if (thread === undefined || thread === null) return null
  if (!isObject(thread)) throw invalidRequest('Invalid request: thread must be an object with a type', { param: 'thread' })
  if (thread.type === 'create') return { type: 'create' }
  if (thread.type !== 'continue') throw invalidRequest('Invalid request: thread.type must be "create" or "continue"', { param: 'thread.type' })
  const id = thread.previous_message_id
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH) {
    throw invalidRequest(`Invalid request: ${PARAM} must be a message id (a non-empty string of at most ${MAX_ID_LENGTH} characters)`, { param: PARAM })
  }
  return { type: 'continue', previous_message_id: id }
}

/** JSON with object keys sorted: equal values compare equal whatever order the caller wrote keys in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (!isObject(value)) return JSON.stringify(value) ?? 'null'
  const keys = Object.keys(value)
    .filter((key) => value[key] !== undefined)
    .sort()
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(',')}}`
}

/** Throws thread_fingerprint_mismatch when a continue repeats `system` or `tools` with another value than the first turn's. */
function checkFingerprint(request: MessagesRequest, first: HeldRequest): void {
  const changed = CREATE_ONLY.filter((field) => request[field] != null && canonical(request[field]) !== canonical(first[field]))
  if (changed.length > 0) throw threadFingerprintMismatch(changed)
}

/** Where a value may hold blocks that carry cache_control (the same keys Anthropic's SDK clears). */
const NESTED = ['content', 'source', 'tool', 'definition', 'tool_references']

/**
 * A message without its cache_control markers, nested ones included. A caller marks a message for
 * the request that first sends it; a history sent again in full would carry every old marker, past
 * the four breakpoints a request may hold. Anthropic's SDK clears them alike when it replays.
 */
export function withoutCacheControl<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withoutCacheControl) as T
  if (!isObject(value)) return value
  const { cache_control: _, ...copy }: Record<string, unknown> = value
  for (const key of NESTED) {
    if (key in copy) copy[key] = withoutCacheControl(copy[key])
  }
  return copy as T
}

/** The messages of a held thread, first turn to last, each turn's answer after its input. */
function historyOf(chain: StoredRecord[]): Messages {
  const history: Messages = []
  for (const record of chain) {
    history.push(...(record.request as HeldRequest).messages, { role: 'assistant', content: (record.answer as { content: ContentBlock[] }).content })
  }
  return withoutCacheControl(history)
}

/** The request without its `thread`: what a target gets that does not hold the thread itself. */
function withoutThread(request: MessagesRequest): MessagesRequest {
  const { thread: _, ...rest } = request
  return rest as MessagesRequest
}

export interface ThreadContext {
  store: ConversationStore
  /** The caller's key: a thread is found only for the key that made it. */
  keyId: string
  now: () => number
  /** How long a record is kept from its writing (`[conversations] responses_ttl_days`). */
  ttlMs: number
  /** How long a continue holds its thread: past it, another request may take over (its own died with its process). */
  claimMs: number
}

/** Where the thread a turn builds on is held. */
type Holder = { at: 'nowhere' } | { at: 'upstream'; upstream: string } | { at: 'gateway'; first: HeldRequest; history: Messages; claimedUntil: number }

/** What a target is sent for a thread turn: `asSent` when it is the caller's request unchanged (its raw body can go as is). */
export interface ThreadRequest {
  request: MessagesRequest
  asSent: boolean
}

/**
 * One thread request: what each target gets, and what is recorded once it is answered. Made by
 * `beginThread`; `record` after the answer, `release` whatever happened (a no-op after `record`).
 */
export class ThreadTurn {
  private done = false
  private rebuilt: MessagesRequest | null = null

  constructor(
    readonly thread: ThreadParam,
    private readonly request: MessagesRequest,
    private readonly holder: Holder,
    private readonly context: ThreadContext,
  ) {}

  /** The Anthropic upstream that holds the thread and must serve this turn; null: any target can. */
  get heldBy(): string | null {
    return this.holder.at === 'upstream' ? this.holder.upstream : null
  }

  /** Whether a target can serve this turn: `native` for one that takes Anthropic's Messages API as sent. */
  serves(upstream: string, native: boolean): boolean {
    return this.holder.at !== 'upstream' || (native && upstream === this.holder.upstream)
  }

  /** The answer when no target of the model can serve this turn: the thread is out of its reach. */
  notServable(): GatewayError {
    return threadNotFound(this.previousId!, `The model asked for cannot reach the upstream holding the thread of`)
  }

  /** What the target gets: Anthropic targets keep the thread they hold; every other turn carries the full history and no `thread`. */
  requestFor(native: boolean): ThreadRequest {
    const { holder, request } = this
    if (holder.at === 'upstream' && !native) throw internalError('A thread held upstream was sent to a target that does not hold it')
    if (holder.at !== 'gateway') return native ? { request, asSent: true } : { request: withoutThread(request), asSent: false }
    this.rebuilt ??= {
      ...withoutThread(request),
      ...(holder.first.system !== undefined && { system: holder.first.system }),
      ...(holder.first.tools !== undefined && { tools: holder.first.tools }),
      messages: [...holder.history, ...request.messages],
    }
    return { request: this.rebuilt, asSent: false }
  }

  /**
   * Records the answer, before it reaches the caller (who may continue at once). A native target
   * that was sent the thread holds it: only its name is kept, under the answer's id. Otherwise the
   * gateway keeps the turn. False when it was too large to keep (the next continue then gets
   * thread_not_found, and the SDK replays in full). Store errors are thrown.
   */
  async record(answer: ThreadAnswer, upstream: string, native: boolean): Promise<boolean> {
    if (this.done) return false
    const { store, keyId, now, ttlMs } = this.context
    const at = now()
    const base = { id: answer.id, keyId, kind: 'thread' as const, parentId: this.previousId, createdAt: at, expiresAt: expiryOf(at, ttlMs) }
    let stored: boolean
    if (native && this.holder.at !== 'gateway') {
      stored = await store.put({ ...base, upstream, request: null, answer: null })
    } else {
      const { system, tools, messages } = this.request
      const held: HeldRequest = this.thread.type === 'create' ? { system, tools, messages } : { messages }
      stored = await store.put({ ...base, upstream: null, request: held, answer: { role: 'assistant', content: answer.content } })
    }
    // A turn too large to keep leaves its parent as it was: free to be continued again.
    if (!stored) await this.release()
    this.done = true
    return stored
  }

  /** Frees the thread for another continue when this turn recorded nothing (it failed, or the caller left). */
  async release(): Promise<void> {
    if (this.done || this.holder.at !== 'gateway') return
    this.done = true
    await this.context.store.release(this.ref!, this.holder.claimedUntil)
  }

  private get previousId(): string | null {
    return this.thread.type === 'continue' ? this.thread.previous_message_id : null
  }

  private get ref(): RecordRef | null {
    const id = this.previousId
    return id === null ? null : { keyId: this.context.keyId, id }
  }
}

/**
 * Starts a thread turn: null when the request has no `thread`. A continue is checked here, before
 * any target is tried: thread_not_found (missing, another key's, expired, or a history past the
 * store's bounds), thread_fingerprint_mismatch, thread_already_continued, thread_continue_in_flight.
 * A continue of a thread the gateway holds claims it until `record` or `release`.
 */
export async function beginThread(request: MessagesRequest, context: ThreadContext): Promise<ThreadTurn | null> {
  const thread = threadOf(request)
  if (thread === null) return null
  if (thread.type === 'create') return new ThreadTurn(thread, request, { at: 'nowhere' }, context)
  const { store, keyId, now, claimMs } = context
  const id = thread.previous_message_id
  const ref = { keyId, id }
  const head = await store.head(ref, now())
  if (head === null || head.kind !== 'thread') throw threadNotFound(id)
  if (head.upstream !== null) return new ThreadTurn(thread, request, { at: 'upstream', upstream: head.upstream }, context)
  // Known from the head alone: no need to read a history that cannot be continued.
  if (head.continuedBy !== null) throw threadAlreadyContinued(id)
  const chain = await store.chain(ref, now())
  if (chain === null) throw threadNotFound(id)
  const first = chain[0]!.request as HeldRequest
  checkFingerprint(request, first)
  const at = now()
  const claimedUntil = at + claimMs
  const outcome = await store.claim(ref, at, claimedUntil)
  if (outcome === 'missing') throw threadNotFound(id)
  if (outcome === 'continued') throw threadAlreadyContinued(id)
  if (outcome === 'in_flight') throw threadContinueInFlight(id)
  return new ThreadTurn(thread, request, { at: 'gateway', first, history: historyOf(chain), claimedUntil }, context)
}

/**
 * The upstream that holds the thread `previousMessageId` continues, for the caller's key: null when
 * none does (the gateway holds it, or there is no such thread for this key).
 */
export async function holderOf(store: ConversationStore, previousMessageId: string, keyId: string, now: number): Promise<string | null> {
  const head = await store.head({ keyId, id: previousMessageId }, now)
  return head?.kind === 'thread' ? head.upstream : null
}

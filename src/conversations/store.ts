/**
 * The conversation store's port: what the gateway keeps of a conversation between requests, so a
 * caller can send only the new turn. Anthropic message threads use it now, the Responses API's
 * `previous_response_id` / GET / DELETE later; both keep one record per answer, chained to the
 * answer it followed. Adapters: src/storage/sqlite/conversations.ts, src/storage/postgres/conversations.ts.
 */

/** A Messages thread turn, or a stored Responses API response. */
export type ConversationKind = 'thread' | 'response'

/** A record is found by its id and its owner together: another key's record does not exist for a caller. */
export interface RecordRef {
  keyId: string
  id: string
}

/** What a record says about itself, without the (possibly large) request and answer. */
export interface RecordHead extends RecordRef {
  kind: ConversationKind
  /**
   * The upstream that holds the conversation itself when it was passed through natively (an
   * Anthropic thread, a native OpenAI response): the next turn must go there. Null: the gateway
   * holds it, in `request` and `answer`.
   */
  upstream: string | null
  /** The record this one followed (`previous_message_id`, `previous_response_id`); null: the first. */
  parentId: string | null
  /** ms since the epoch. */
  createdAt: number
  /** After this (ms since the epoch) the record is gone for every read, and pruning removes it. */
  expiresAt: number
  /** Bytes of request and answer as stored (UTF-8 JSON). */
  size: number
  /** The id of the record that continued this one (threads are continued once); null: none yet. */
  continuedBy: string | null
}

/** One answer and what was asked for it: the new input of this turn only, never the history before it. */
export interface ConversationRecord extends Omit<RecordHead, 'size' | 'continuedBy'> {
  /** JSON: for threads `{system?, tools?, messages}` (system and tools on the first turn only); for responses, input items. */
  request: unknown
  /** JSON: for threads the assistant message `{role, content}`; for responses, the output items. */
  answer: unknown
}

/** What a read of a stored record gives back: the record and its bookkeeping. */
export type StoredRecord = ConversationRecord & Pick<RecordHead, 'size' | 'continuedBy'>

/**
 * Claiming a thread turn to continue it: `claimed` (this request holds it until its claim runs out),
 * `missing` (no such record for this key, or expired), `continued` (another turn already followed
 * it), `in_flight` (another request holds a claim that has not run out).
 */
export type ClaimOutcome = 'claimed' | 'missing' | 'continued' | 'in_flight'

/**
 * Bounds on what is kept. A record holds one turn's new input and its answer: a request body is
 * capped at GATEWAY_MAX_BODY_BYTES (1 MiB by default) and an answer by its max_tokens, so 16 MiB
 * leaves room for operators who raise the body cap. A rebuilt history is capped at 32 MiB and 4096
 * turns, Anthropic's own request size: an upstream would refuse a larger one anyway, and a read
 * never loads more than that. A record over its bound is not stored (put answers false); a history
 * over its bound is treated as not found, which Anthropic's SDK answers by replaying in full.
 */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024
export const MAX_CHAIN_BYTES = 32 * 1024 * 1024
export const MAX_CHAIN_TURNS = 4096

/**
 * Expiry times are rounded up to a whole step. Every turn before a record must live as long as it,
 * so a put extends them; with rounded times, the turns of a busy thread already share the newest
 * turn's expiry, and the walk up its history stops at the first one (once a step, it walks it all).
 * A record may thus outlive its TTL by up to one step.
 */
export const EXPIRY_STEP_MS = 3_600_000

/** When a record written at `now` expires. */
export const expiryOf = (now: number, ttlMs: number): number => Math.ceil((now + ttlMs) / EXPIRY_STEP_MS) * EXPIRY_STEP_MS

/** Rows a single prune statement removes at most, so a backlog never holds the database for long. */
export const PRUNE_BATCH = 1000

export interface ConversationStore {
  /**
   * Stores a record (replacing one with the same id and key: ids come from answers, which a caller
   * that reuses its request ids can repeat). With a parent, in the same transaction: the parent is
   * marked continued by it (its claim ends), and every live ancestor lives at least as long as it
   * (the walk up stops at the first that already does: every one before it does too).
   * False, and nothing written, when the record is over MAX_RECORD_BYTES.
   */
  put(record: ConversationRecord): Promise<boolean>
  /** The record, if it exists for this key and has not expired. */
  get(ref: RecordRef, now: number): Promise<StoredRecord | null>
  /** Its head only: cheap whatever the record's size. */
  head(ref: RecordRef, now: number): Promise<RecordHead | null>
  /**
   * The records from the first turn to `ref`, in order, in one query. Null when `ref` is missing,
   * when a record on the way is missing or expired, or when the chain is over MAX_CHAIN_TURNS or
   * MAX_CHAIN_BYTES.
   */
  chain(ref: RecordRef, now: number): Promise<StoredRecord[] | null>
  /**
   * Claims a record the gateway holds (no upstream) so that one request at a time continues it,
   * until `until` (ms). A claim that ran out (its request died with its process) can be taken again.
   */
  claim(ref: RecordRef, now: number, until: number): Promise<ClaimOutcome>
  /** Gives up the claim taken with `until`, unless the record was continued meanwhile (a later claim is left alone). */
  release(ref: RecordRef, until: number): Promise<void>
  /** Deletes the record; false when there was none for this key. */
  delete(ref: RecordRef): Promise<boolean>
  /** Removes up to PRUNE_BATCH records expired at `now`; returns how many. */
  pruneExpired(now: number): Promise<number>
}

/** A record with its request and answer as JSON text (made once, when it is put) and their size in bytes. */
export interface EncodedRecord extends Omit<ConversationRecord, 'request' | 'answer'> {
  request: string
  answer: string
  size: number
}

/** What one fold writes: the records journaled past the journal's fold point, in the order they were put, and the point it moves to. */
export interface ConversationFold {
  records: EncodedRecord[]
  seq: number
}

/**
 * A store that journaled puts are folded into (SQLite; see journaled.ts). Replaying a record is
 * exactly what `put` would have written.
 */
export interface FoldableConversationStore extends ConversationStore {
  /**
   * In one transaction: reads the fold point of `journal` (0 when it has none), writes what `plan`
   * makes of it in order, and moves the point to its `seq`. A null plan writes nothing.
   */
  fold(journal: string, plan: (foldedSeq: number) => ConversationFold | null): Promise<void>
  /** Deletes the fold point of a journal that is gone. */
  forgetJournal(journal: string): Promise<void>
}

/**
 * Moves journaled records into the store: in the background, before reads that need the database,
 * and a last time at shutdown. A store written at once (Postgres, memory) has nothing to move.
 */
export interface ConversationPipeline {
  start(onFoldError: (error: unknown) => void): void
  fold(): Promise<void>
  stop(): Promise<void>
}

/** The pipeline of a store written at once. */
export const NO_PIPELINE: ConversationPipeline = { start: () => {}, fold: async () => {}, stop: async () => {} }

/** A record's JSON as stored, with its size; null when it is over MAX_RECORD_BYTES. */
export function encodeRecord(record: ConversationRecord): { request: string; answer: string; size: number } | null {
  const request = JSON.stringify(record.request ?? null)
  const answer = JSON.stringify(record.answer ?? null)
  // Cheap first: a UTF-16 length is at most the UTF-8 size, so only a near miss is measured exactly.
  if (request.length + answer.length > MAX_RECORD_BYTES) return null
  const size = Buffer.byteLength(request) + Buffer.byteLength(answer)
  return size > MAX_RECORD_BYTES ? null : { request, answer, size }
}

/** The record with its JSON encoded; null when it is over MAX_RECORD_BYTES. */
export function encodedRecord(record: ConversationRecord): EncodedRecord | null {
  const encoded = encodeRecord(record)
  if (encoded === null) return null
  const { keyId, id, kind, upstream, parentId, createdAt, expiresAt } = record
  return { keyId, id, kind, upstream, parentId, createdAt, expiresAt, ...encoded }
}

/**
 * The records of a chain query, first turn first, or null when the chain is not whole: its first
 * record still names a parent (missing, expired, or past a bound), or it is over MAX_CHAIN_BYTES.
 */
export function wholeChain(rowsLeafFirst: StoredRecord[]): StoredRecord[] | null {
  if (rowsLeafFirst.length === 0) return null
  const records = rowsLeafFirst.toReversed()
  if (records[0]!.parentId !== null) return null
  const total = records.reduce((sum, record) => sum + record.size, 0)
  return total > MAX_CHAIN_BYTES ? null : records
}

/** Whether records journaled in front of the store can be folded into it. */
export const isFoldable = (store: ConversationStore): store is FoldableConversationStore =>
  typeof (store as Partial<FoldableConversationStore>).fold === 'function' && typeof (store as Partial<FoldableConversationStore>).forgetJournal === 'function'

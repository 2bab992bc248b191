import type { MessagesRequest } from '../wire/anthropic/types'
import { type ConversationPipeline, type ConversationStore, NO_PIPELINE, PRUNE_BATCH } from './store'
import { beginThread, holderOf, type ThreadTurn } from './threads'

export interface ConversationsOptions {
  /** How long a record is kept from its writing: read at each write, so a reload's new value applies at once. */
  ttlMs: () => number
  now: () => number
  /**
   * How long a continue holds its thread before another request may take it: a claim is released
   * when its request ends, so this only bounds one lost with its process. Longer than any stream.
   */
  claimMs?: number
  /** What moves journaled records into the database (SQLite: journaled.ts); none when the store is written at once. */
  pipeline?: ConversationPipeline
}

const DEFAULT_CLAIM_MS = 30 * 60_000

/** The gateway's conversations: the store with the settings and clock every request uses alike. */
export class Conversations {
  private readonly claimMs: number
  /** Started with the gateway's background work, stopped (a last fold) at shutdown. */
  readonly pipeline: ConversationPipeline

  constructor(
    readonly store: ConversationStore,
    private readonly options: ConversationsOptions,
  ) {
    this.claimMs = options.claimMs ?? DEFAULT_CLAIM_MS
    this.pipeline = options.pipeline ?? NO_PIPELINE
  }

  /** A Messages request's thread turn (see threads.ts), or null when it has no `thread`. Throws the thread_* errors. */
  beginThread(request: MessagesRequest, keyId: string): Promise<ThreadTurn | null> {
    const { now, ttlMs } = this.options
    return beginThread(request, { store: this.store, keyId, now, ttlMs: ttlMs(), claimMs: this.claimMs })
  }

  /** The upstream holding the thread of `previousMessageId` for this key; null when the gateway holds it or there is none. */
  holderOf(previousMessageId: string, keyId: string): Promise<string | null> {
    return holderOf(this.store, previousMessageId, keyId, this.options.now())
  }

  /** Removes every expired record, a batch at a time; returns how many. */
  async pruneExpired(): Promise<number> {
    let removed = 0
    for (;;) {
      const batch = await this.store.pruneExpired(this.options.now())
      removed += batch
      if (batch < PRUNE_BATCH) return removed
      // SQLite deletes synchronously: requests get the event loop between two batches.
      await new Promise((resolve) => setTimeout(resolve, 0))
    }
  }
}

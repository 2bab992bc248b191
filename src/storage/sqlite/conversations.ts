import { and, eq, gt, isNull, lte, or } from 'drizzle-orm'
import { conversations } from '../../../db/schema'
import {
  type ClaimOutcome,
  type ConversationFold,
  type ConversationKind,
  type ConversationRecord,
  type EncodedRecord,
  encodedRecord,
  type FoldableConversationStore,
  MAX_CHAIN_BYTES,
  MAX_CHAIN_TURNS,
  PRUNE_BATCH,
  type RecordHead,
  type RecordRef,
  type StoredRecord,
  wholeChain,
} from '../../conversations/store'
import type { Db } from './open'

type Row = typeof conversations.$inferSelect

const head = {
  keyId: conversations.keyId,
  id: conversations.id,
  kind: conversations.kind,
  upstream: conversations.upstream,
  parentId: conversations.parentId,
  createdAt: conversations.createdAt,
  expiresAt: conversations.expiresAt,
  size: conversations.size,
  continuedBy: conversations.continuedBy,
}

const headOf = (row: Omit<Row, 'request' | 'answer' | 'claimedUntil'>): RecordHead => ({ ...row, kind: row.kind as ConversationKind })

const recordOf = ({ request, answer, claimedUntil: _, ...row }: Row): StoredRecord => ({
  ...headOf(row),
  request: JSON.parse(request),
  answer: JSON.parse(answer),
})

const refIs = (ref: RecordRef) => and(eq(conversations.keyId, ref.keyId), eq(conversations.id, ref.id))
const live = (ref: RecordRef, now: number) => and(refIs(ref), gt(conversations.expiresAt, now))

/**
 * A record and the turns before it, walking `parent_id` up one key, nearest first: one primary-key
 * lookup per turn, each row read once. Bounded in turns and bytes, so a cycle (an id reused by its
 * own descendant) or a huge history stops the walk.
 */
const CHAIN = `
  WITH RECURSIVE chain(keyId, id, kind, upstream, parentId, request, answer, size, createdAt, expiresAt, continuedBy, depth, total) AS (
    SELECT key_id, id, kind, upstream, parent_id, request, answer, size, created_at, expires_at, continued_by, 1, size
    FROM conversations WHERE key_id = $key AND id = $id AND expires_at > $now
    UNION ALL
    SELECT c.key_id, c.id, c.kind, c.upstream, c.parent_id, c.request, c.answer, c.size, c.created_at, c.expires_at, c.continued_by,
           chain.depth + 1, chain.total + c.size
    FROM chain JOIN conversations c ON c.key_id = $key AND c.id = chain.parentId
    WHERE chain.depth < $turns AND chain.total <= $bytes AND c.expires_at > $now
  )
  SELECT keyId, id, kind, upstream, parentId, request, answer, size, createdAt, expiresAt, continuedBy, NULL AS claimedUntil FROM chain ORDER BY depth`

/**
 * Extends the live ancestors of a new record (from its parent up) that expire before it. Each
 * ancestor outlives its descendants, so the first that already lives long enough ends the walk.
 */
const EXTEND = `
  WITH RECURSIVE up(id, parent_id, depth) AS (
    SELECT id, parent_id, 1 FROM conversations WHERE key_id = $key AND id = $id AND expires_at > $now AND expires_at < $until
    UNION ALL
    SELECT c.id, c.parent_id, up.depth + 1
    FROM up JOIN conversations c ON c.key_id = $key AND c.id = up.parent_id
    WHERE up.depth < $turns AND c.expires_at > $now AND c.expires_at < $until
  )
  UPDATE conversations SET expires_at = $until WHERE key_id = $key AND id IN (SELECT id FROM up)`

/** One record, written or replaced (ids come from answers, which a caller may repeat): a prepared statement, not a query built per call. */
const INSERT = `
  INSERT INTO conversations (key_id, id, kind, upstream, parent_id, request, answer, size, created_at, expires_at, continued_by, claimed_until)
  VALUES ($key, $id, $kind, $upstream, $parent, $request, $answer, $size, $created, $expires, NULL, NULL)
  ON CONFLICT (key_id, id) DO UPDATE SET kind = excluded.kind, upstream = excluded.upstream, parent_id = excluded.parent_id,
    request = excluded.request, answer = excluded.answer, size = excluded.size, created_at = excluded.created_at,
    expires_at = excluded.expires_at, continued_by = NULL, claimed_until = NULL`

/**
 * A conversation journal's fold point, in the table of every journal's fold point (`usage_journals`,
 * keyed by name): under a name of its own, which a usage journal's id never takes.
 */
const foldPointOf = (journal: string) => `conversations:${journal}`

/**
 * The conversation store on SQLite: every read and write goes through the (key_id, id) primary key.
 * Written at once (puts of one event-loop turn in one transaction), or, with a journal in front of
 * it (conversations/journaled.ts), by folds of journaled records.
 */
export class SqliteConversationStore implements FoldableConversationStore {
  private readonly chainQuery
  private readonly extendAncestors
  private readonly prune
  private readonly readPoint
  private readonly writePoint
  private readonly deletePoint
  private readonly foldBatch

  constructor(private readonly db: Db) {
    this.chainQuery = db.$client.query<Row, Record<string, string | number>>(CHAIN)
    this.extendAncestors = db.$client.query<never, Record<string, string | number>>(EXTEND)
    this.insert = db.$client.query<never, Record<string, string | number | null>>(INSERT)
    this.markContinued = db.$client.query<never, Record<string, string>>(
      `UPDATE conversations SET continued_by = $child, claimed_until = NULL WHERE key_id = $key AND id = $id`,
    )
    this.prune = db.$client.query<never, { now: number; batch: number }>(
      `DELETE FROM conversations WHERE rowid IN (SELECT rowid FROM conversations WHERE expires_at <= $now LIMIT $batch)`,
    )
    this.writeBatch = db.$client.transaction((records: EncodedRecord[]) => {
      for (const record of records) this.write(record)
    })
    this.readPoint = db.$client.query<{ seq: number }, { journal: string }>('SELECT folded_seq AS seq FROM usage_journals WHERE journal = $journal')
    this.writePoint = db.$client.query<never, { journal: string; seq: number }>(
      'INSERT INTO usage_journals (journal, folded_seq) VALUES ($journal, $seq) ON CONFLICT (journal) DO UPDATE SET folded_seq = excluded.folded_seq',
    )
    this.deletePoint = db.$client.query<never, { journal: string }>('DELETE FROM usage_journals WHERE journal = $journal')
    this.foldBatch = db.$client.transaction((journal: string, plan: (foldedSeq: number) => ConversationFold | null) => {
      const fold = plan(this.readPoint.get({ journal: foldPointOf(journal) })?.seq ?? 0)
      if (fold === null) return
      for (const record of fold.records) this.write(record)
      this.writePoint.run({ journal: foldPointOf(journal), seq: fold.seq })
    })
  }

  private readonly insert
  private readonly markContinued
  private readonly writeBatch
  /** Records put in this event-loop turn, written together in one transaction at its end. */
  private pending: { record: EncodedRecord; done: (error?: unknown) => void }[] = []

  private write(record: EncodedRecord): void {
    this.insert.run({
      key: record.keyId,
      id: record.id,
      kind: record.kind,
      upstream: record.upstream,
      parent: record.parentId,
      request: record.request,
      answer: record.answer,
      size: record.size,
      created: record.createdAt,
      expires: record.expiresAt,
    })
    if (record.parentId === null) return
    this.markContinued.run({ child: record.id, key: record.keyId, id: record.parentId })
    // A history is only as alive as its oldest turn: the turns before this one live as long as it does.
    this.extendAncestors.run({ key: record.keyId, id: record.parentId, now: record.createdAt, until: record.expiresAt, turns: MAX_CHAIN_TURNS })
  }

  /**
   * Puts made in the same event-loop turn are written in one transaction (a group commit): a record
   * costs a few statements, not a commit of its own, when many requests answer at once. Each put
   * resolves once its transaction committed.
   */
  put(record: ConversationRecord): Promise<boolean> {
    const encoded = encodedRecord(record)
    if (encoded === null) return Promise.resolve(false)
    return new Promise((resolve, reject) => {
      if (this.pending.length === 0) setImmediate(() => this.flush())
      this.pending.push({ record: encoded, done: (error) => (error === undefined ? resolve(true) : reject(error)) })
    })
  }

  private flush(): void {
    const batch = this.pending
    this.pending = []
    try {
      this.writeBatch(batch.map((entry) => entry.record))
    } catch (error) {
      for (const entry of batch) entry.done(error)
      return
    }
    for (const entry of batch) entry.done()
  }

  async get(ref: RecordRef, now: number): Promise<StoredRecord | null> {
    const row = this.db.select().from(conversations).where(live(ref, now)).get()
    return row ? recordOf(row) : null
  }

  async head(ref: RecordRef, now: number): Promise<RecordHead | null> {
    const row = this.db.select(head).from(conversations).where(live(ref, now)).get()
    return row ? headOf(row) : null
  }

  async chain(ref: RecordRef, now: number): Promise<StoredRecord[] | null> {
    const rows = this.chainQuery.all({ key: ref.keyId, id: ref.id, now, turns: MAX_CHAIN_TURNS, bytes: MAX_CHAIN_BYTES })
    return wholeChain(rows.map(recordOf))
  }

  async claim(ref: RecordRef, now: number, until: number): Promise<ClaimOutcome> {
    const taken = this.db
      .update(conversations)
      .set({ claimedUntil: until })
      .where(
        and(
          live(ref, now),
          isNull(conversations.upstream),
          isNull(conversations.continuedBy),
          or(isNull(conversations.claimedUntil), lte(conversations.claimedUntil, now)),
        ),
      )
      .returning({ id: conversations.id })
      .get()
    if (taken) return 'claimed'
    const found = this.db.select({ continuedBy: conversations.continuedBy, upstream: conversations.upstream }).from(conversations).where(live(ref, now)).get()
    // A record an upstream holds has nothing here to continue from.
    if (!found || found.upstream !== null) return 'missing'
    return found.continuedBy !== null ? 'continued' : 'in_flight'
  }

  async release(ref: RecordRef, until: number): Promise<void> {
    this.db
      .update(conversations)
      .set({ claimedUntil: null })
      .where(and(refIs(ref), eq(conversations.claimedUntil, until)))
      .run()
  }

  async delete(ref: RecordRef): Promise<boolean> {
    return this.db.delete(conversations).where(refIs(ref)).returning({ id: conversations.id }).all().length > 0
  }

  async pruneExpired(now: number): Promise<number> {
    return this.prune.run({ now, batch: PRUNE_BATCH }).changes
  }

  async fold(journal: string, plan: (foldedSeq: number) => ConversationFold | null): Promise<void> {
    this.foldBatch.immediate(journal, plan)
  }

  async forgetJournal(journal: string): Promise<void> {
    this.deletePoint.run({ journal: foldPointOf(journal) })
  }
}

import { and, eq, gt, isNull, lte, or, type SQL, sql } from 'drizzle-orm'
import { conversations } from '../../../db/pg/schema'
import {
  type ClaimOutcome,
  type ConversationKind,
  type ConversationRecord,
  type ConversationStore,
  encodeRecord,
  MAX_CHAIN_BYTES,
  MAX_CHAIN_TURNS,
  PRUNE_BATCH,
  type RecordHead,
  type RecordRef,
  type StoredRecord,
  wholeChain,
} from '../../conversations/store'
import { guarded, type PgDb, type PgTx } from './open'

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
 * A record and the turns before it, walking `parent_id` up one key, nearest first (see the SQLite
 * twin): one primary-key lookup per turn, each row read once, bounded in turns and bytes.
 */
const chainOf = (ref: RecordRef, now: number): SQL => sql`
  WITH RECURSIVE chain("keyId", id, kind, upstream, "parentId", request, answer, size, "createdAt", "expiresAt", "continuedBy", depth, total) AS (
    SELECT key_id, id, kind, upstream, parent_id, request, answer, size, created_at, expires_at, continued_by, 1, size
    FROM conversations WHERE key_id = ${ref.keyId} AND id = ${ref.id} AND expires_at > ${now}
    UNION ALL
    SELECT c.key_id, c.id, c.kind, c.upstream, c.parent_id, c.request, c.answer, c.size, c.created_at, c.expires_at, c.continued_by,
           chain.depth + 1, chain.total + c.size
    FROM chain JOIN conversations c ON c.key_id = ${ref.keyId} AND c.id = chain."parentId"
    WHERE chain.depth < ${MAX_CHAIN_TURNS} AND chain.total <= ${MAX_CHAIN_BYTES} AND c.expires_at > ${now}
  )
  SELECT "keyId", id, kind, upstream, "parentId", request, answer, size, "createdAt", "expiresAt", "continuedBy" FROM chain ORDER BY depth`

/**
 * Extends the live ancestors of a new record (from its parent up) that expire before it. Each
 * ancestor outlives its descendants, so the first that already lives long enough ends the walk.
 */
const extend = (parent: RecordRef, now: number, until: number): SQL => sql`
  WITH RECURSIVE up(id, parent_id, depth) AS (
    SELECT id, parent_id, 1 FROM conversations
    WHERE key_id = ${parent.keyId} AND id = ${parent.id} AND expires_at > ${now} AND expires_at < ${until}
    UNION ALL
    SELECT c.id, c.parent_id, up.depth + 1
    FROM up JOIN conversations c ON c.key_id = ${parent.keyId} AND c.id = up.parent_id
    WHERE up.depth < ${MAX_CHAIN_TURNS} AND c.expires_at > ${now} AND c.expires_at < ${until}
  )
  UPDATE conversations SET expires_at = ${until} WHERE key_id = ${parent.keyId} AND id IN (SELECT id FROM up)`

/** A raw row of the chain query: postgres.js gives bigint columns as strings. */
interface RawRow {
  keyId: string
  id: string
  kind: string
  upstream: string | null
  parentId: string | null
  request: string
  answer: string
  size: string | number
  createdAt: string | number
  expiresAt: string | number
  continuedBy: string | null
}

const fromRaw = (raw: RawRow): StoredRecord =>
  recordOf({ ...raw, size: Number(raw.size), createdAt: Number(raw.createdAt), expiresAt: Number(raw.expiresAt), claimedUntil: null })

/** The conversation store on Postgres, shared by every instance: every read and write goes through the (key_id, id) primary key. */
export class PgConversationStore implements ConversationStore {
  constructor(private readonly db: PgDb) {}

  put(record: ConversationRecord): Promise<boolean> {
    const encoded = encodeRecord(record)
    if (encoded === null) return Promise.resolve(false)
    const row: Row = { ...record, ...encoded, continuedBy: null, claimedUntil: null }
    const upsert = (db: PgDb | PgTx) =>
      db
        .insert(conversations)
        .values(row)
        .onConflictDoUpdate({ target: [conversations.keyId, conversations.id], set: row })
    // A first turn is one statement, atomic by itself: one round trip instead of three (BEGIN, INSERT, COMMIT).
    const parentId = record.parentId
    if (parentId === null) return guarded(async () => (await upsert(this.db), true))
    return guarded(() =>
      this.db.transaction(async (tx) => {
        const parent = { keyId: record.keyId, id: parentId }
        // Sent together, the connection pipelines them: one wait instead of three. Their order does
        // not matter: the parent's two updates set different columns.
        await Promise.all([
          upsert(tx),
          tx.update(conversations).set({ continuedBy: record.id, claimedUntil: null }).where(refIs(parent)),
          // A history is only as alive as its oldest turn: the turns before this one live as long as it does.
          tx.execute(extend(parent, record.createdAt, record.expiresAt)),
        ])
        return true
      }),
    )
  }

  get(ref: RecordRef, now: number): Promise<StoredRecord | null> {
    return guarded(async () => {
      const [row] = await this.db.select().from(conversations).where(live(ref, now))
      return row ? recordOf(row) : null
    })
  }

  head(ref: RecordRef, now: number): Promise<RecordHead | null> {
    return guarded(async () => {
      const [row] = await this.db.select(head).from(conversations).where(live(ref, now))
      return row ? headOf(row) : null
    })
  }

  chain(ref: RecordRef, now: number): Promise<StoredRecord[] | null> {
    return guarded(async () => {
      const rows = await this.db.execute<RawRow & Record<string, unknown>>(chainOf(ref, now))
      return wholeChain([...rows].map(fromRaw))
    })
  }

  claim(ref: RecordRef, now: number, until: number): Promise<ClaimOutcome> {
    return guarded(async () => {
      // One statement: of two instances claiming at once, the second waits on the row, then finds it taken.
      const taken = await this.db
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
      if (taken.length > 0) return 'claimed'
      const [found] = await this.db
        .select({ continuedBy: conversations.continuedBy, upstream: conversations.upstream })
        .from(conversations)
        .where(live(ref, now))
      // A record an upstream holds has nothing here to continue from.
      if (!found || found.upstream !== null) return 'missing'
      return found.continuedBy !== null ? 'continued' : 'in_flight'
    })
  }

  release(ref: RecordRef, until: number): Promise<void> {
    return guarded(async () => {
      await this.db
        .update(conversations)
        .set({ claimedUntil: null })
        .where(and(refIs(ref), eq(conversations.claimedUntil, until)))
    })
  }

  delete(ref: RecordRef): Promise<boolean> {
    return guarded(async () => (await this.db.delete(conversations).where(refIs(ref)).returning({ id: conversations.id })).length > 0)
  }

  pruneExpired(now: number): Promise<number> {
    return guarded(
      async () =>
        (
          await this.db.execute(sql`DELETE FROM conversations WHERE (key_id, id) IN
            (SELECT key_id, id FROM conversations WHERE expires_at <= ${now} LIMIT ${PRUNE_BATCH})`)
        ).count,
    )
  }
}

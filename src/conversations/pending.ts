/**
 * The records this process journaled and has not folded into the database yet (see journaled.ts),
 * as every read of this process must see them: each one as its put left it, and as the puts after
 * it changed it (continued by a later turn, kept alive as long as it). A put also changes records
 * already in the database (its parent, and the ancestors it keeps alive); those changes are only
 * noted: a read that needs such a record folds first.
 */
import { type EncodedRecord, MAX_CHAIN_BYTES, MAX_CHAIN_TURNS, type RecordHead, type RecordRef, type StoredRecord, wholeChain } from './store'

/** A record put and not folded yet. */
interface Pending {
  record: EncodedRecord
  /** The journal batch it was appended in. */
  seq: number
  /** As the puts after it left it: `put` semantics, in order, as the database will have them once folded. */
  continuedBy: string | null
  expiresAt: number
  /** Its put changes a record that is in the database, not here. */
  changesDatabase: boolean
}

const keyOf = (keyId: string, id: string) => `${keyId}\n${id}`

const headOf = ({ record, continuedBy, expiresAt }: Pending): RecordHead => ({
  keyId: record.keyId,
  id: record.id,
  kind: record.kind,
  upstream: record.upstream,
  parentId: record.parentId,
  createdAt: record.createdAt,
  expiresAt,
  size: record.size,
  continuedBy,
})

/** A fresh copy every read, as a read of the database parses one. */
const storedOf = (pending: Pending): StoredRecord => ({
  ...headOf(pending),
  request: JSON.parse(pending.record.request),
  answer: JSON.parse(pending.record.answer),
})

export class PendingRecords {
  /** Every put not folded yet, in the order of the journal (a record put twice is here twice). */
  private log: Pending[] = []
  /** The last put of each record. */
  private latest = new Map<string, Pending>()
  /** How many puts in `log` change a record in the database. */
  private changing = 0
  private loggedBytes = 0

  /** Puts not folded yet. */
  get size(): number {
    return this.log.length
  }

  /** Bytes of request and answer of the puts not folded yet: about what a fold writes. */
  get bytes(): number {
    return this.loggedBytes
  }

  /** Whether a put here changed a record in the database: a read there may find it stale until a fold. */
  get changesDatabase(): boolean {
    return this.changing > 0
  }

  has(ref: RecordRef): boolean {
    return this.latest.has(keyOf(ref.keyId, ref.id))
  }

  /** A record appended to the journal in batch `seq`. */
  add(record: EncodedRecord, seq: number): void {
    const pending: Pending = { record, seq, continuedBy: null, expiresAt: record.expiresAt, changesDatabase: false }
    this.log.push(pending)
    this.loggedBytes += record.size
    this.latest.set(keyOf(record.keyId, record.id), pending)
    pending.changesDatabase = this.applyToAncestors(record)
    if (pending.changesDatabase) this.changing++
  }

  /**
   * What `put` does to the turns before a record (the SQLite adapter's markContinued and EXTEND):
   * its parent is continued by it, and its live ancestors that expire before it live as long as it,
   * up to the first that already does. True when that reaches a record not here.
   */
  private applyToAncestors({ keyId, id, parentId, createdAt, expiresAt }: EncodedRecord): boolean {
    if (parentId === null) return false
    let current = this.latest.get(keyOf(keyId, parentId))
    if (!current) return true
    current.continuedBy = id
    for (let depth = 1; depth <= MAX_CHAIN_TURNS; depth++) {
      if (!(current.expiresAt > createdAt && current.expiresAt < expiresAt)) return false
      current.expiresAt = expiresAt
      const up: string | null = current.record.parentId
      if (up === null) return false
      const next = this.latest.get(keyOf(keyId, up))
      if (!next) return true
      current = next
    }
    return false
  }

  /** Its head; null when expired at `now`; undefined when it is not here (the database has it, if anyone). */
  head(ref: RecordRef, now: number): RecordHead | null | undefined {
    const pending = this.latest.get(keyOf(ref.keyId, ref.id))
    if (!pending) return undefined
    return pending.expiresAt > now ? headOf(pending) : null
  }

  /** The record; null when expired at `now`; undefined when it is not here. */
  get(ref: RecordRef, now: number): StoredRecord | null | undefined {
    const pending = this.latest.get(keyOf(ref.keyId, ref.id))
    if (!pending) return undefined
    return pending.expiresAt > now ? storedOf(pending) : null
  }

  /**
   * The chain to `ref` when every turn of it is here (the store's `chain`, bounds included);
   * undefined when `ref` is not here or its chain goes on in the database.
   */
  chain(ref: RecordRef, now: number): StoredRecord[] | null | undefined {
    let current = this.latest.get(keyOf(ref.keyId, ref.id))
    if (!current) return undefined
    const found: Pending[] = []
    let total = 0
    // Leaf first, as the database's walk: it stops at an expired turn, or past a bound.
    while (current.expiresAt > now) {
      found.push(current)
      total += current.record.size
      const parent: string | null = current.record.parentId
      if (parent === null || found.length >= MAX_CHAIN_TURNS || total > MAX_CHAIN_BYTES) break
      const next = this.latest.get(keyOf(ref.keyId, parent))
      if (!next) return undefined
      current = next
    }
    return wholeChain(found.map(storedOf))
  }

  /** The records of the batches past `after` up to `upTo`, in the order they were put: what a fold writes. */
  between(after: number, upTo: number): EncodedRecord[] {
    return this.log.filter((pending) => pending.seq > after && pending.seq <= upTo).map((pending) => pending.record)
  }

  /**
   * Forgets the batches up to `upTo`, now in the database. The puts after them are applied again,
   * in order, to what is left: a record's state comes only from its own put and the puts after it.
   */
  folded(upTo: number): void {
    const left = this.log.filter((pending) => pending.seq > upTo)
    this.log = []
    this.latest = new Map()
    this.changing = 0
    this.loggedBytes = 0
    for (const { record, seq } of left) this.add(record, seq)
  }
}

import { type CachedAnswer, CacheIndex, type ResponseCacheStore } from './store'

/** Kept answers are written this often, together: a request never waits on a write. */
const FLUSH_MS = 50
/**
 * Or in the next turn once this many bytes of answers wait: a SQLite table is written on the event
 * loop, about 4 µs a KiB, and answers of up to `max_entry_bytes` each could otherwise make a 50 ms
 * batch that held every request for tens of milliseconds.
 */
export const FLUSH_AT_BYTES = 1024 * 1024

const bytesOf = (answer: CachedAnswer | null | undefined): number => (answer ? Buffer.byteLength(answer.body) : 0)
/** Answers kept or read lately stay in memory up to this many bytes: a hot entry costs no read. */
const HOT_BYTES = 64 * 1024 * 1024

/** A live entry as the table lists it at start: its key, expiry and size. */
export interface TableEntry {
  key: string
  expiresAt: number
  bytes: number
}

/** A database table of cached answers (SQLite's or Postgres's `response_cache`). */
export interface CacheTable {
  /** One entry, or null when it is not there. */
  read(key: string): CachedAnswer | null | Promise<CachedAnswer | null>
  /** Writes a batch in one transaction: each answer kept (replacing any), each null deleted. */
  write(batch: [string, CachedAnswer | null][]): void | Promise<void>
  close(): void | Promise<void>
}

/**
 * The response cache in a database table, kept across restarts. The index of live entries (key,
 * expiry, size) is in memory, listed once at start: a miss reads nothing, a hit on an entry not
 * among the hot ones (the last `HOT_BYTES` kept or read) reads its one row. Writes wait in memory
 * (served from there) until the next flush; a batch the table cannot take is dropped, its entries
 * forgotten: the cache never slows or fails a request.
 */
export class TableCacheStore implements ResponseCacheStore {
  private readonly index: CacheIndex
  private readonly pending = new Map<string, CachedAnswer | null>()
  private readonly hot = new Map<string, CachedAnswer>()
  private hotBytes = 0
  /** Bytes of the answers in `pending`. */
  private pendingBytes = 0
  private timer: Timer | null = null
  private soon: ReturnType<typeof setImmediate> | null = null
  /** The batch being written, until its write settles. */
  private writing: Promise<void> | null = null

  constructor(
    private readonly table: CacheTable,
    live: TableEntry[],
    maxEntries: number,
    private readonly maxEntryBytes: number,
    private readonly flushMs = FLUSH_MS,
  ) {
    this.index = new CacheIndex(maxEntries)
    for (const entry of live) this.index.add(entry.key, { expiresAt: entry.expiresAt, bytes: entry.bytes }, this.drop)
  }

  get(key: string, now: number): CachedAnswer | null | Promise<CachedAnswer | null> {
    if (!this.index.live(key, now, this.drop)) return null
    const held = this.hot.get(key) ?? this.pending.get(key)
    if (held) return held
    const read = this.table.read(key)
    if (read instanceof Promise) return read.then((answer) => this.warmed(key, answer)).catch(() => null)
    return this.warmed(key, read)
  }

  put(key: string, answer: CachedAnswer): void {
    const bytes = Buffer.byteLength(answer.body)
    if (bytes > this.maxEntryBytes) return
    this.pendingBytes += bytes - bytesOf(this.pending.get(key))
    this.pending.set(key, answer)
    this.warmed(key, answer)
    this.index.add(key, { expiresAt: answer.expiresAt, bytes }, this.drop)
    this.flushSoon()
  }

  /** Holds the answer in memory, letting the oldest held ones go past the budget (they stay in the table). */
  private warmed(key: string, answer: CachedAnswer | null): CachedAnswer | null {
    if (answer === null) return null
    this.cool(key)
    this.hot.set(key, answer)
    this.hotBytes += answer.body.length
    for (const [oldest] of this.hot) {
      if (this.hotBytes <= HOT_BYTES) break
      this.cool(oldest)
    }
    return answer
  }

  private cool(key: string): void {
    const held = this.hot.get(key)
    if (!held) return
    this.hot.delete(key)
    this.hotBytes -= held.body.length
  }

  private readonly drop = (key: string): void => {
    this.cool(key)
    this.pendingBytes -= bytesOf(this.pending.get(key))
    this.pending.set(key, null)
    this.flushSoon()
  }

  /** A flush in `flushMs`, or in the next turn once FLUSH_AT_BYTES wait. */
  private flushSoon(): void {
    if (this.pendingBytes >= FLUSH_AT_BYTES) {
      this.soon ??= setImmediate(() => void this.flush())
      return
    }
    if (this.timer || this.soon) return
    this.timer = setTimeout(() => void this.flush(), this.flushMs)
    this.timer.unref?.()
  }

  /**
   * Writes what waits, in one batch. One batch at a time, in order: on Postgres a later one (an
   * entry's removal, or its newer answer) written first would be undone by the earlier one.
   */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer)
    if (this.soon) clearImmediate(this.soon)
    this.timer = this.soon = null
    while (this.writing) await this.writing
    if (this.pending.size === 0) return
    const batch = [...this.pending]
    this.pending.clear()
    this.pendingBytes = 0
    this.writing = this.write(batch).finally(() => (this.writing = null))
    return this.writing
  }

  /** A batch the table cannot take is dropped: its answers are forgotten, not retried. */
  private async write(batch: [string, CachedAnswer | null][]): Promise<void> {
    try {
      await this.table.write(batch)
    } catch {
      for (const [key, answer] of batch) {
        if (answer === null) continue
        this.index.forget(key)
        this.cool(key)
      }
    }
  }

  async close(): Promise<void> {
    await this.flush()
    await this.table.close()
  }
}

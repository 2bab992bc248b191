import { Database } from 'bun:sqlite'
import { type CachedAnswer, CacheIndex, type ResponseCacheStore } from '../../cache/store'

/** Kept answers are written this often, together, in one transaction: a request never waits on a write. */
const FLUSH_MS = 50
/** Answers kept or read lately stay in memory up to this many bytes: a hot entry costs no read. */
const HOT_BYTES = 64 * 1024 * 1024

/**
 * The response cache in the SQLite file, kept across restarts. The index of live entries (key,
 * expiry, size) is in memory, read once at start: a miss reads nothing, a hit on an entry not among
 * the hot ones (the last `HOT_BYTES` kept or read) reads its one row.
 * Writes wait in memory (still served from there) until the next flush, on a connection of its own
 * with a short busy timeout: a cache that cannot write drops the entry rather than slow a request.
 */
export class SqliteCacheStore implements ResponseCacheStore {
  private readonly sqlite: Database
  private readonly index: CacheIndex
  private readonly pending = new Map<string, CachedAnswer | null>()
  private readonly hot = new Map<string, CachedAnswer>()
  private hotBytes = 0
  private timer: Timer | null = null
  private readonly read
  private readonly write
  private readonly remove

  constructor(
    path: string,
    maxEntries: number,
    private readonly maxEntryBytes: number,
    now: number,
  ) {
    this.sqlite = new Database(path, { strict: true })
    this.sqlite.run('PRAGMA busy_timeout = 100')
    this.index = new CacheIndex(maxEntries)
    this.sqlite.run('DELETE FROM response_cache WHERE expires_at <= ?', [now])
    const live = this.sqlite
      .query<{ key: string; expires_at: number; bytes: number }, []>(
        'SELECT key, expires_at, length(CAST(body AS BLOB)) AS bytes FROM response_cache ORDER BY created_at',
      )
      .all()
    for (const row of live) this.index.add(row.key, { expiresAt: row.expires_at, bytes: row.bytes }, (gone) => this.pending.set(gone, null))
    this.read = this.sqlite.query<{ body: string; usage: string | null; cost_nanos: number; created_at: number; expires_at: number }, [string]>(
      'SELECT body, usage, cost_nanos, created_at, expires_at FROM response_cache WHERE key = ?',
    )
    this.write = this.sqlite.query(
      'INSERT OR REPLACE INTO response_cache (key, body, usage, cost_nanos, created_at, expires_at) VALUES ($key, $body, $usage, $cost, $created, $expires)',
    )
    this.remove = this.sqlite.query('DELETE FROM response_cache WHERE key = ?')
    if (this.pending.size > 0) this.flushSoon()
  }

  get(key: string, now: number): CachedAnswer | null {
    if (!this.index.live(key, now, this.drop)) return null
    const kept = this.hot.get(key)
    if (kept) return kept
    const row = this.read.get(key)
    if (!row) return null
    const usage = row.usage === null ? null : (JSON.parse(row.usage) as CachedAnswer['usage'])
    const answer: CachedAnswer = { body: row.body, usage, costNanos: row.cost_nanos, createdAt: row.created_at, expiresAt: row.expires_at }
    this.warm(key, answer)
    return answer
  }

  /** Holds the answer in memory, letting the oldest held ones go past the budget (they stay in the file). */
  private warm(key: string, answer: CachedAnswer): void {
    this.cool(key)
    this.hot.set(key, answer)
    this.hotBytes += answer.body.length
    for (const [oldest] of this.hot) {
      if (this.hotBytes <= HOT_BYTES) break
      this.cool(oldest)
    }
  }

  private cool(key: string): void {
    const held = this.hot.get(key)
    if (!held) return
    this.hot.delete(key)
    this.hotBytes -= held.body.length
  }

  put(key: string, answer: CachedAnswer): void {
    const bytes = Buffer.byteLength(answer.body)
    if (bytes > this.maxEntryBytes) return
    this.pending.set(key, answer)
    this.warm(key, answer)
    this.index.add(key, { expiresAt: answer.expiresAt, bytes }, this.drop)
    this.flushSoon()
  }

  private readonly drop = (key: string): void => {
    this.cool(key)
    this.pending.set(key, null)
    this.flushSoon()
  }

  private flushSoon(): void {
    this.timer ??= setTimeout(() => this.flush(), FLUSH_MS)
    this.timer.unref?.()
  }

  /** Writes what waits, in one transaction; on a busy database, drops it (the index forgets it too). */
  flush(): void {
    this.timer = null
    const batch = [...this.pending]
    this.pending.clear()
    try {
      this.sqlite.transaction(() => {
        for (const [key, answer] of batch) {
          if (answer === null) this.remove.run(key)
          else
            this.write.run({
              key,
              body: answer.body,
              usage: answer.usage === null ? null : JSON.stringify(answer.usage),
              cost: answer.costNanos,
              created: answer.createdAt,
              expires: answer.expiresAt,
            })
        }
      })()
    } catch {
      for (const [key, answer] of batch) {
        if (answer === null) continue
        this.index.forget(key)
        this.cool(key)
      }
    }
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer)
    this.flush()
    this.sqlite.close()
  }
}

import type { Usage } from '../wire/pivot/types'

/** One cached answer: the JSON answer of its inbound API, and what it cost when it was made. */
export interface CachedAnswer {
  /** The answer's JSON text, as a JSON request of the same API gets it. */
  body: string
  /** The usage the upstream reported: a streamed hit's final event carries it. */
  usage: Usage | null
  /** What the answer cost, in nano-dollars: what each hit saves. */
  costNanos: number
  /** When it was made and when it lapses (ms since the epoch). */
  createdAt: number
  expiresAt: number
}

/**
 * Where cached answers are kept: memory, a SQLite table (kept across restarts), or Redis (shared by
 * every instance). Each keeps at most `maxEntries`, the oldest out first, and none over
 * `maxEntryBytes` (the stores check it: a caller may hand any answer).
 */
export interface ResponseCacheStore {
  /** The entry under `key` unless it lapsed by `now`; null otherwise. */
  get(key: string, now: number): Promise<CachedAnswer | null> | CachedAnswer | null
  /** Keeps (or replaces) the entry. Never fails the request: a store that cannot keep it drops it. */
  put(key: string, answer: CachedAnswer): void
  /** Writes what waits to be written, and lets go of the store's connections. */
  close(): void | Promise<void>
}

/** What a store sees of an entry without reading it: its size and when it lapses. */
export interface EntryFacts {
  expiresAt: number
  bytes: number
}

/**
 * The bounds of a store that holds its index in this process: entries in the order they were kept
 * (a Map keeps insertion order; a replaced entry moves to the end), the oldest dropped first.
 */
export class CacheIndex {
  private readonly entries = new Map<string, EntryFacts>()

  constructor(private readonly maxEntries: number) {}

  get size(): number {
    return this.entries.size
  }

  /** Whether `key` is held and not lapsed at `now` (a lapsed one is dropped here, and named to `drop`). */
  live(key: string, now: number, drop: (key: string) => void): boolean {
    const facts = this.entries.get(key)
    if (!facts) return false
    if (facts.expiresAt > now) return true
    this.entries.delete(key)
    drop(key)
    return false
  }

  forget(key: string): void {
    this.entries.delete(key)
  }

  /** Adds `key` as the newest; calls `drop` for each key pushed out by the bound. */
  add(key: string, facts: EntryFacts, drop: (key: string) => void): void {
    this.entries.delete(key)
    this.entries.set(key, facts)
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) break
      this.entries.delete(oldest)
      drop(oldest)
    }
  }
}

/** Answers in this process only: for an in-memory database (a database file or Postgres keeps them in its table). */
export class MemoryCacheStore implements ResponseCacheStore {
  private readonly answers = new Map<string, CachedAnswer>()
  private readonly index: CacheIndex

  constructor(
    maxEntries: number,
    private readonly maxEntryBytes: number,
  ) {
    this.index = new CacheIndex(maxEntries)
  }

  get(key: string, now: number): CachedAnswer | null {
    if (!this.index.live(key, now, (gone) => this.answers.delete(gone))) return null
    return this.answers.get(key) ?? null
  }

  put(key: string, answer: CachedAnswer): void {
    const bytes = Buffer.byteLength(answer.body)
    if (bytes > this.maxEntryBytes) return
    this.answers.set(key, answer)
    this.index.add(key, { expiresAt: answer.expiresAt, bytes }, (gone) => this.answers.delete(gone))
  }

  close(): void {}
}

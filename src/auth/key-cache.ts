import type { KeyRecord, KeyStore } from './keys'

/**
 * Every key, in memory, by hash: a known key is authenticated without touching the database. A key
 * this cache does not hold costs one cheap check, whether any process changed the key table since
 * the cache loaded it, and a reload only when one did: a key created anywhere works on its very
 * first request, and a flood of made-up keys causes no reload and holds no memory. A poll makes
 * revocations by other processes take effect within its interval.
 */
export class KeyCache {
  private byHash = new Map<string, KeyRecord>()
  /** The key-table version the map was loaded at. */
  private loadedVersion = -1
  /** SQLite's data_version at the last look: unchanged means no other connection wrote anything. */
  private seenDatabaseVersion = -1
  private timer: Timer | null = null

  constructor(
    private readonly store: KeyStore,
    private readonly onReload: () => void = () => {},
  ) {
    this.reload()
  }

  get size(): number {
    return this.byHash.size
  }

  /** The key with this hash, if any; see the class comment for what an unknown hash costs. */
  find(hash: string): KeyRecord | undefined {
    return this.byHash.get(hash) ?? (this.reloadIfChanged() ? this.byHash.get(hash) : undefined)
  }

  /** Puts a record this process just wrote, so it takes effect here at once. */
  put(record: KeyRecord): void {
    this.byHash.set(record.hash, record)
  }

  /** Reloads when another process changed a key since the last load; says whether it did. */
  reloadIfChanged(): boolean {
    const databaseVersion = this.store.databaseVersion()
    if (databaseVersion === this.seenDatabaseVersion) return false
    this.seenDatabaseVersion = databaseVersion
    if (this.store.version() === this.loadedVersion) return false
    this.reload()
    return true
  }

  reload(): void {
    // Versions first: a change committed while the rows are read is seen again at the next check.
    this.seenDatabaseVersion = this.store.databaseVersion()
    this.loadedVersion = this.store.version()
    const next = new Map<string, KeyRecord>()
    for (const record of this.store.all()) next.set(record.hash, record)
    this.byHash = next
    this.onReload()
  }

  /** Polls for changes by other processes, so their revocations apply within `intervalMs`. */
  watch(intervalMs = 250): void {
    this.timer ??= setInterval(() => this.reloadIfChanged(), intervalMs)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }
}

import type { KeyRecord, KeyStore } from './keys'

/**
 * Every key, in memory, by hash: a known key is authenticated without touching the store, and
 * without waiting on anything. A key this cache does not hold costs one cheap check, whether any
 * process changed the key table since the cache loaded it (one check at a time, shared by every
 * unknown key meanwhile), and a reload only when one did: a key created anywhere works on its very
 * first request, and a flood of made-up keys causes no reload and holds no memory. Revocations by
 * other processes take effect when the gateway's watch (gateway.ts, watchStores) next checks.
 */
export class KeyCache {
  private byHash = new Map<string, KeyRecord>()
  /** The key-table version the map was loaded at. */
  private loadedVersion = -1
  private checking: Promise<boolean> | null = null
  /** Records put while a reload reads the store: applied over what it read, which may predate them. */
  private putDuringReload: KeyRecord[] | null = null

  private constructor(
    private readonly store: KeyStore,
    private readonly onReload: () => void,
  ) {}

  static async load(store: KeyStore, onReload: () => void = () => {}): Promise<KeyCache> {
    const cache = new KeyCache(store, onReload)
    await cache.reload()
    return cache
  }

  get size(): number {
    return this.byHash.size
  }

  /** The key with this hash: at once when it is known, else once the store was checked for changes. */
  find(hash: string): KeyRecord | Promise<KeyRecord | undefined> {
    return this.byHash.get(hash) ?? this.reloadIfChanged().then(() => this.byHash.get(hash))
  }

  /** Puts a record this process just wrote, so it takes effect here at once. */
  put(record: KeyRecord): void {
    this.byHash.set(record.hash, record)
    this.putDuringReload?.push(record)
  }

  /** Reloads when another process changed a key since the last load; says whether it did. */
  reloadIfChanged(): Promise<boolean> {
    this.checking ??= (async () => {
      try {
        if ((await this.store.version()) === this.loadedVersion) return false
        await this.reload()
        return true
      } finally {
        this.checking = null
      }
    })()
    return this.checking
  }

  async reload(): Promise<void> {
    // The version first: a change committed while the rows are read is seen again at the next check.
    const putDuringReload: KeyRecord[] = (this.putDuringReload = [])
    try {
      const version = await this.store.version()
      const next = new Map<string, KeyRecord>()
      for (const record of await this.store.all()) next.set(record.hash, record)
      for (const record of putDuringReload) next.set(record.hash, record)
      this.loadedVersion = version
      this.byHash = next
    } finally {
      this.putDuringReload = null
    }
    this.onReload()
  }
}

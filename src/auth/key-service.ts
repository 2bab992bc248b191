import type { KeyCache } from './key-cache'
import type { KeyPatch, KeyRecord, KeyStore, NewKey } from './keys'

/**
 * The one way keys are created, changed and revoked: by the admin API, the dashboard, the CLI and
 * the first-key creation alike. It writes the key and then puts the result into this process's
 * cache itself, so a change takes effect here at once; other processes see it through the
 * key-table version (see KeyCache).
 */
export class KeyService {
  constructor(
    readonly store: KeyStore,
    /** null in processes that do not authenticate (the CLI). */
    private readonly cache: KeyCache | null,
    private readonly now: () => number = Date.now,
  ) {}

  create(input: NewKey): { record: KeyRecord; key: string } {
    const created = this.store.create(input, this.now())
    this.cache?.put(created.record)
    return created
  }

  /** The first key, when the database has none yet (see KeyStore.createFirst). */
  createFirst(input: NewKey): { record: KeyRecord; key: string } | null {
    const created = this.store.createFirst(input, this.now())
    if (created) this.cache?.put(created.record)
    return created
  }

  update(idOrPrefix: string, patch: KeyPatch): KeyRecord {
    const record = this.store.update(idOrPrefix, patch, this.now())
    this.cache?.put(record)
    return record
  }

  revoke(idOrPrefix: string): KeyRecord {
    const record = this.store.revoke(idOrPrefix, this.now())
    this.cache?.put(record)
    return record
  }

  list(): KeyRecord[] {
    return this.store.list()
  }

  find(idOrPrefix: string): KeyRecord {
    return this.store.find(idOrPrefix)
  }
}

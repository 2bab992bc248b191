import type { Database } from 'bun:sqlite'
import { apiKeys } from '../../db/schema'
import type { Db } from '../db'
import type { KeyRecord } from './keys'

/**
 * Every key, in memory, by hash: requests never read the database to authenticate. Another process
 * (the CLI) changing keys bumps SQLite's data_version, which a cheap poll notices, so a revoked key
 * stops working within one poll interval.
 */
export class KeyCache {
  private byHash = new Map<string, KeyRecord>()
  private dataVersion = -1
  private timer: Timer | null = null
  private readonly versionQuery

  constructor(
    sqlite: Database,
    private readonly db: Db,
  ) {
    this.versionQuery = sqlite.query<{ data_version: number }, []>('PRAGMA data_version')
    this.reload()
  }

  get(hash: string): KeyRecord | undefined {
    return this.byHash.get(hash)
  }

  get size(): number {
    return this.byHash.size
  }

  reload(): void {
    this.dataVersion = this.versionQuery.get()?.data_version ?? -1
    const next = new Map<string, KeyRecord>()
    for (const record of this.db.select().from(apiKeys).all()) next.set(record.hash, record)
    this.byHash = next
  }

  /** Reloads when another connection has committed since the last look. */
  reloadIfChanged(): void {
    const version = this.versionQuery.get()?.data_version ?? -1
    if (version !== this.dataVersion) this.reload()
  }

  watch(intervalMs = 250): void {
    this.timer ??= setInterval(() => this.reloadIfChanged(), intervalMs)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }
}

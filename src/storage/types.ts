import type { KeyStore } from '../auth/keys'
import type { ConfigStore } from '../config/types'
import type { QuotaBaseline } from '../limits/limiter'
import type { UsageReadStore, UsageStore } from '../usage/store'

/**
 * Every store the gateway keeps state in, opened together on one database. The domain sees only
 * these ports; which database is behind them is decided once, where the gateway is put together.
 */
export interface Stores {
  keys: KeyStore
  config: ConfigStore
  usage: UsageStore
  usageReads: UsageReadStore
  quotaBaseline: QuotaBaseline
  /** The database file usage journals sit beside (see usage/journal.ts); null when there is none. */
  journalBase: string | null
  /** Resolves when the database answers; rejects with its error when it does not. */
  ping(): Promise<void>
  close(): void
}

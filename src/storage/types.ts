import type { KeyStore } from '../auth/keys'
import type { ConfigStore } from '../config/types'
import type { ConversationStore } from '../conversations/store'
import type { QuotaBaseline } from '../limits/limiter'
import type { RequestLogStore } from '../request-log/store'
import type { UsageReadStore, UsageStore } from '../usage/store'

/** What another process changed: keys, or the config. */
export type StoreChange = 'keys' | 'config'

/**
 * Announcements of writes by other processes, when the database can push them (Postgres
 * LISTEN/NOTIFY). Only a shortcut: an announcement can be lost, so watchers poll as well.
 */
export interface ChangeFeed {
  /** Calls `onChange` for every announcement until the stores close; resolves once listening. */
  listen(onChange: (change: StoreChange) => void): Promise<void>
}

/**
 * Every store the gateway keeps state in, opened together on one database. The domain sees only
 * these ports; which database is behind them is decided once, where the gateway is put together.
 */
export interface Stores {
  /** Which database: for the log line at start and /health. */
  backend: 'sqlite' | 'postgres'
  keys: KeyStore
  config: ConfigStore
  usage: UsageStore
  usageReads: UsageReadStore
  quotaBaseline: QuotaBaseline
  /** Anthropic message threads and Responses API conversations kept for their next turn. */
  conversations: ConversationStore
  /** One record per request (src/request-log/). */
  requestLog: RequestLogStore
  /** The database file usage journals sit beside; null when the database is not a local file. */
  journalBase: string | null
  /** Announcements of other processes' writes; null when the database has none (SQLite: polling only). */
  changes: ChangeFeed | null
  /** Resolves when the database answers; rejects with its error when it does not. */
  ping(): Promise<void>
  close(): Promise<void>
}

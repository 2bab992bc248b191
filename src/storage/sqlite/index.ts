import type { Stores } from '../types'
import { SqliteConfigStore } from './config'
import { SqliteConversationStore } from './conversations'
import { SqliteKeyStore } from './keys'
import { openSqlite } from './open'
import { sqliteQuotaBaseline } from './quota-baseline'
import { openSqliteRequestLog } from './request-log'
import { SqliteUsageStore } from './usage'
import { SqliteUsageReads } from './usage-reads'

/** Every store on one SQLite file (created and migrated as needed), or in memory for ':memory:'. */
export function openSqliteStores(path: string): Stores {
  const database = openSqlite(path)
  const ping = database.sqlite.query('SELECT 1')
  const requestLog = openSqliteRequestLog(database)
  return {
    backend: 'sqlite',
    keys: new SqliteKeyStore(database.db),
    config: new SqliteConfigStore(database.db),
    usage: new SqliteUsageStore(database.db),
    usageReads: new SqliteUsageReads(database.db),
    quotaBaseline: sqliteQuotaBaseline(database.db),
    conversations: new SqliteConversationStore(database.db),
    requestLog: requestLog.store,
    journalBase: database.path,
    changes: null,
    ping: async () => void ping.get(),
    close: async () => {
      requestLog.close()
      database.close()
    },
  }
}

import type { Stores } from '../types'
import { PgConfigStore } from './config'
import { PgConversationStore } from './conversations'
import { PgKeyStore } from './keys'
import { CHANGES_CHANNEL, guarded, openPostgres, type PostgresOptions } from './open'
import { pgQuotaBaseline } from './quota-baseline'
import { PgRequestLogStore } from './request-log'
import { PgUsageStore } from './usage'
import { PgUsageReads } from './usage-reads'

/** Every store on one Postgres database, migrated as needed (several instances may share it). */
export async function openPostgresStores(url: string, options: PostgresOptions): Promise<Stores> {
  const { db, sql, close } = await openPostgres(url, options)
  return {
    backend: 'postgres',
    keys: new PgKeyStore(db),
    config: new PgConfigStore(db),
    usage: new PgUsageStore(db),
    usageReads: new PgUsageReads(db),
    quotaBaseline: pgQuotaBaseline(db),
    conversations: new PgConversationStore(db),
    requestLog: new PgRequestLogStore(db),
    journalBase: null,
    changes: {
      // postgres.js listens on a connection of its own and listens again after a reconnect.
      listen: async (onChange) => {
        await sql.listen(CHANGES_CHANNEL, (payload) => {
          if (payload === 'keys' || payload === 'config') onChange(payload)
        })
      },
    },
    ping: () => guarded(async () => void (await sql`SELECT 1`)),
    close,
  }
}

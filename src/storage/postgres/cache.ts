import postgres from 'postgres'
import type { CachedAnswer } from '../../cache/store'
import { type CacheTable, TableCacheStore } from '../../cache/table-store'

interface Row {
  body: string
  usage: string | null
  cost_nanos: string
  created_at: string
  expires_at: string
}

/**
 * The response cache in Postgres's `response_cache` (see cache/table-store.ts), for one instance on
 * Postgres without Redis; a cluster keeps it in Redis. Two connections of its own, short timeouts:
 * a read that fails is a miss, a batch that fails is dropped.
 */
export async function openPgCache(url: string, maxEntries: number, maxEntryBytes: number, now: number): Promise<TableCacheStore> {
  const sql = postgres(url, {
    max: 2,
    connect_timeout: 5,
    onnotice: () => {},
    connection: { application_name: 'chatgate response cache', statement_timeout: 5_000 },
  })
  await sql`DELETE FROM response_cache WHERE expires_at <= ${now}`
  const live = await sql<{ key: string; expires_at: string; bytes: number }[]>`
    SELECT key, expires_at, octet_length(body) AS bytes FROM response_cache ORDER BY created_at`
  const table: CacheTable = {
    async read(key) {
      const [row] = await sql<Row[]>`SELECT body, usage, cost_nanos, created_at, expires_at FROM response_cache WHERE key = ${key}`
      if (!row) return null
      const usage = row.usage === null ? null : (JSON.parse(row.usage) as CachedAnswer['usage'])
      return { body: row.body, usage, costNanos: Number(row.cost_nanos), createdAt: Number(row.created_at), expiresAt: Number(row.expires_at) }
    },
    async write(batch) {
      await sql.begin(async (tx) => {
        for (const [key, answer] of batch) {
          if (answer === null) {
            await tx`DELETE FROM response_cache WHERE key = ${key}`
            continue
          }
          const usage = answer.usage === null ? null : JSON.stringify(answer.usage)
          await tx`
            INSERT INTO response_cache (key, body, usage, cost_nanos, created_at, expires_at)
            VALUES (${key}, ${answer.body}, ${usage}, ${answer.costNanos}, ${answer.createdAt}, ${answer.expiresAt})
            ON CONFLICT (key) DO UPDATE SET body = excluded.body, usage = excluded.usage, cost_nanos = excluded.cost_nanos,
              created_at = excluded.created_at, expires_at = excluded.expires_at`
        }
      })
    },
    close: () => sql.end({ timeout: 1 }),
  }
  const entries = live.map((row) => ({ key: row.key, expiresAt: Number(row.expires_at), bytes: Number(row.bytes) }))
  return new TableCacheStore(table, entries, maxEntries, maxEntryBytes)
}

import { Database } from 'bun:sqlite'
import type { CachedAnswer } from '../../cache/store'
import { type CacheTable, TableCacheStore } from '../../cache/table-store'

interface Row {
  body: string
  usage: string | null
  cost_nanos: number
  created_at: number
  expires_at: number
}

/**
 * The response cache in the SQLite file (see cache/table-store.ts), on a connection of its own with
 * a short busy timeout: a write the database cannot take at once is dropped, never waited for.
 */
export function openSqliteCache(path: string, maxEntries: number, maxEntryBytes: number, now: number): TableCacheStore {
  const sqlite = new Database(path, { strict: true })
  sqlite.run('PRAGMA busy_timeout = 100')
  try {
    sqlite.run('DELETE FROM response_cache WHERE expires_at <= ?', [now])
  } catch {
    // Another process holds the database (several starting at once): the lapsed rows go another time.
  }
  const live = sqlite
    .query<{ key: string; expiresAt: number; bytes: number }, [number]>(
      'SELECT key, expires_at AS expiresAt, length(CAST(body AS BLOB)) AS bytes FROM response_cache WHERE expires_at > ? ORDER BY created_at',
    )
    .all(now)
  const read = sqlite.query<Row, [string]>('SELECT body, usage, cost_nanos, created_at, expires_at FROM response_cache WHERE key = ?')
  const write = sqlite.query(
    'INSERT OR REPLACE INTO response_cache (key, body, usage, cost_nanos, created_at, expires_at) VALUES ($key, $body, $usage, $cost, $created, $expires)',
  )
  const remove = sqlite.query('DELETE FROM response_cache WHERE key = ?')
  const table: CacheTable = {
    read(key) {
      const row = read.get(key)
      if (!row) return null
      const usage = row.usage === null ? null : (JSON.parse(row.usage) as CachedAnswer['usage'])
      return { body: row.body, usage, costNanos: row.cost_nanos, createdAt: row.created_at, expiresAt: row.expires_at }
    },
    write(batch) {
      sqlite.transaction(() => {
        for (const [key, answer] of batch) {
          if (answer === null) remove.run(key)
          else {
            const usage = answer.usage === null ? null : JSON.stringify(answer.usage)
            write.run({ key, body: answer.body, usage, cost: answer.costNanos, created: answer.createdAt, expires: answer.expiresAt })
          }
        }
      })()
    },
    close: () => sqlite.close(),
  }
  return new TableCacheStore(table, live, maxEntries, maxEntryBytes)
}

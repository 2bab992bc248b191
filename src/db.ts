import { Database } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { type BunSQLiteDatabase, drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import * as schema from '../db/schema'
import { journalPathFor } from './usage/journal'

/** Drizzle over bun:sqlite; `$client` is the raw connection, for the few statements Drizzle cannot express. */
export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database }
/** The database or a transaction on it: what functions that read or write rows take. */
export type DbOrTx = Db | Parameters<Parameters<Db['transaction']>[0]>[0]

export interface Storage {
  sqlite: Database
  db: Db
  /** The usage journal beside the database file (see usage/journal.ts); null in memory. */
  journalPath: string | null
  close(): void
}

const MIGRATIONS = new URL('../db/migrations', import.meta.url).pathname

/** Opens (creating if needed) the SQLite file in WAL mode and applies pending migrations. */
export function openStorage(path: string): Storage {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const sqlite = new Database(path, { create: true, strict: true })
  // WAL: readers (CLI, admin views) never block the server's writes. synchronous=NORMAL keeps every
  // committed transaction across a process kill; only an OS crash can lose the last ones.
  sqlite.run('PRAGMA journal_mode = WAL')
  sqlite.run('PRAGMA synchronous = NORMAL')
  sqlite.run('PRAGMA busy_timeout = 5000')
  sqlite.run('PRAGMA foreign_keys = ON')
  const db = drizzle(sqlite, { schema })
  migrate(db, { migrationsFolder: MIGRATIONS })
  return { sqlite, db, journalPath: journalPathFor(path), close: () => sqlite.close() }
}

import { Database } from 'bun:sqlite'
import { closeSync, mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import { type BunSQLiteDatabase, drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import * as schema from '../../../db/schema'
import { fromRoot } from '../../root'

/** Drizzle over bun:sqlite; `$client` is the raw connection, for the few statements Drizzle cannot express. */
export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database }
/** The database or a transaction on it: what functions that read or write rows take. */
export type DbOrTx = Db | Parameters<Parameters<Db['transaction']>[0]>[0]

/** An open SQLite database: the handle the SQLite stores share. */
export interface SqliteDatabase {
  sqlite: Database
  db: Db
  /** The database file; null in memory. Usage journals live beside it (see usage/journal.ts). */
  path: string | null
  close(): void
}

const MIGRATIONS = fromRoot('db/migrations')

/** When the newest migration was made: a database whose journal of migrations reaches it is up to date. */
const NEWEST_MIGRATION: number = Math.max(
  ...(require('../../../db/migrations/meta/_journal.json') as { entries: { when: number }[] }).entries.map((e) => e.when),
)

/**
 * Applies pending migrations. Drizzle reads what is applied before it takes the write lock, so of two
 * processes starting together on a new file, the second one fails on tables the first just made;
 * its migrations are then applied, which is all that matters.
 */
function migrateOnce(db: Db): void {
  try {
    migrate(db, { migrationsFolder: MIGRATIONS })
  } catch (error) {
    const applied = db.$client.query<{ newest: number | null }, []>('SELECT max(created_at) AS newest FROM __drizzle_migrations').get()?.newest ?? 0
    if (Number(applied) < NEWEST_MIGRATION) throw error
  }
}

/** Opens (creating if needed) the SQLite file in WAL mode and applies pending migrations. */
export function openSqlite(path: string): SqliteDatabase {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    // Created owner-only before SQLite opens it: SQLite gives its -wal and -shm files the same mode.
    closeSync(openSync(path, 'a', 0o600))
  }
  const sqlite = new Database(path, { create: true, strict: true })
  // The busy timeout first: switching a new file to WAL takes a lock that another process starting
  // at the same moment may hold. WAL: readers (CLI, admin views) never block the server's writes.
  // synchronous=NORMAL keeps every committed transaction across a process kill; only an OS crash
  // can lose the last ones.
  sqlite.run('PRAGMA busy_timeout = 5000')
  sqlite.run('PRAGMA journal_mode = WAL')
  sqlite.run('PRAGMA synchronous = NORMAL')
  sqlite.run('PRAGMA foreign_keys = ON')
  const db = drizzle(sqlite, { schema })
  migrateOnce(db)
  return { sqlite, db, path: path === ':memory:' ? null : path, close: () => sqlite.close() }
}

/**
 * A version number kept in a row, read cheaply: SQLite's `data_version` changes only when another
 * connection commits, so the row is read again only then. This connection's own writes leave it as
 * it was; `note` records the version such a write produced.
 */
export function screenedVersion(db: Db, readRow: () => number): { read(): number; note(version: number): void } {
  const dataVersion = db.$client.query<{ data_version: number }, []>('PRAGMA data_version')
  let seen = -1
  let last = 0
  return {
    read() {
      const current = dataVersion.get()?.data_version ?? -1
      if (current !== seen) {
        seen = current
        last = readRow()
      }
      return last
    },
    note(version) {
      last = version
    },
  }
}

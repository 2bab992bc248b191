import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { getTableConfig as pgTableConfig, type PgTable } from 'drizzle-orm/pg-core'
import { getTableConfig as sqliteTableConfig, type SQLiteTable } from 'drizzle-orm/sqlite-core'
import postgres from 'postgres'
import * as pgSchema from '../db/pg/schema'
import * as sqliteSchema from '../db/schema'
import { openSqlite } from '../src/storage/sqlite/open'
import { openPostgres } from '../src/storage/postgres/open'
import { tempDir } from './support/gateway'
import { describeWithServers, type PostgresServer, startPostgres } from './support/servers'

/** A table as both databases must agree on it: its columns (name, required), primary key and unique columns. */
interface Shape {
  columns: Record<string, { notNull: boolean }>
  primaryKey: string[]
  unique: string[]
}

function shapes<T>(
  tables: T[],
  config: (table: T) => {
    name: string
    columns: { name: string; notNull: boolean; primary: boolean; isUnique: boolean }[]
    primaryKeys: { columns: { name: string }[] }[]
  },
) {
  const out: Record<string, Shape> = {}
  for (const table of tables) {
    const { name, columns, primaryKeys } = config(table)
    out[name] = {
      columns: Object.fromEntries(columns.map((c) => [c.name, { notNull: c.notNull }])),
      primaryKey: [...columns.filter((c) => c.primary).map((c) => c.name), ...primaryKeys.flatMap((pk) => pk.columns.map((c) => c.name))].sort(),
      unique: columns
        .filter((c) => c.isUnique)
        .map((c) => c.name)
        .sort(),
    }
  }
  return out
}

const isTable = (value: unknown) => typeof value === 'object' && value !== null && Symbol.for('drizzle:IsDrizzleTable') in value

describe('the SQLite and Postgres schemas are in step', () => {
  test('db/schema.ts and db/pg/schema.ts declare the same tables, columns, nullability and keys', () => {
    const sqlite = shapes(Object.values(sqliteSchema).filter(isTable) as SQLiteTable[], sqliteTableConfig)
    const pg = shapes(Object.values(pgSchema).filter(isTable) as PgTable[], pgTableConfig)
    expect(Object.keys(sqlite).length).toBeGreaterThanOrEqual(10)
    expect(pg).toEqual(sqlite)
  })
})

describeWithServers('the migrated databases are in step', ['postgres'], () => {
  let server: PostgresServer
  beforeAll(async () => {
    server = await startPostgres()
  })
  afterAll(async () => {
    await server?.dispose()
  })

  test('after their migrations, both databases hold the same tables and columns', async () => {
    using dir = tempDir()
    const file = openSqlite(`${dir.path}/parity.sqlite`)
    file.close()
    const sqlite = new Database(`${dir.path}/parity.sqlite`, { readonly: true })
    const sqliteColumns = sqlite
      .query<{ table_name: string; column_name: string; not_null: number }, []>(
        `SELECT m.name AS table_name, p.name AS column_name, p."notnull" AS not_null
         FROM sqlite_master m JOIN pragma_table_info(m.name) p
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE '__drizzle%'`,
      )
      .all()
      .map((c) => `${c.table_name}.${c.column_name}${c.not_null || isPrimaryKeyOnly(sqlite, c) ? ' not null' : ''}`)
      .sort()
    sqlite.close()

    const url = await server.createDatabase()
    const database = await openPostgres(url, { applicationName: 'parity test', poolSize: 1 })
    await database.close()
    const sql = postgres(url, { max: 1, onnotice: () => {} })
    const pgColumns = (
      await sql<{ table_name: string; column_name: string; is_nullable: string }[]>`
        SELECT table_name, column_name, is_nullable FROM information_schema.columns WHERE table_schema = 'public'`
    )
      .map((c) => `${c.table_name}.${c.column_name}${c.is_nullable === 'NO' ? ' not null' : ''}`)
      .sort()
    await sql.end()
    expect(pgColumns.length).toBeGreaterThan(50)
    expect(pgColumns).toEqual(sqliteColumns)
  })
})

/** SQLite reports a single-column INTEGER/TEXT primary key as nullable; Postgres makes every key column NOT NULL. */
function isPrimaryKeyOnly(db: Database, column: { table_name: string; column_name: string }): boolean {
  const info = db.query<{ name: string; pk: number }, []>(`SELECT name, pk FROM pragma_table_info('${column.table_name}')`).all()
  return info.some((c) => c.name === column.column_name && c.pk > 0)
}

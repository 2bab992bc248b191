import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { getTableConfig as pgTableConfig, type PgTable } from 'drizzle-orm/pg-core'
import { getTableConfig as sqliteTableConfig, type SQLiteTable } from 'drizzle-orm/sqlite-core'
import postgres from 'postgres'
import * as pgSchema from '../db/pg/schema'
import * as sqliteSchema from '../db/schema'
import { KeyService } from '../src/auth/key-service'
import type { KeyRecord } from '../src/auth/keys'
import { loadGatewayConfig } from '../src/config/load'
import type { GatewayError } from '../src/errors'
import { providerKinds } from '../src/providers'
import { openPostgresStores } from '../src/storage/postgres'
import { openPostgres } from '../src/storage/postgres/open'
import { openSqliteStores } from '../src/storage/sqlite'
import { openSqlite } from '../src/storage/sqlite/open'
import type { Stores } from '../src/storage/types'
import type { LogRow } from '../src/request-log/entry'
import { UsageTotals } from '../src/usage/accumulator'
import type { UsageEntry } from '../src/usage/entry'
import type { BucketSums } from '../src/usage/store'
import { tempDir } from './support/gateway'
import { describeWithServers, type PostgresServer, sharedPostgres } from './support/servers'
import { seededRandom } from './support/random'
import { setup, teardown, TEST_MS } from './support/hooks'
import { storeScenario } from './conversations/store-scenario'

setDefaultTimeout(TEST_MS)

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
  setup(async () => {
    server = await sharedPostgres()
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

describeWithServers('the SQLite and Postgres stores answer alike', ['postgres'], () => {
  let server: PostgresServer
  let sqlite: Stores
  let pg: Stores
  const dir = tempDir()
  setup(async () => {
    server = await sharedPostgres()
    sqlite = openSqliteStores(`${dir.path}/stores.sqlite`)
    pg = await openPostgresStores(await server.createDatabase(), { applicationName: 'parity test', poolSize: 4 })
  })
  teardown(async () => {
    await Promise.all([sqlite?.close(), pg?.close()])
    dir[Symbol.dispose]()
  })
  const both = <T>(read: (stores: Stores) => Promise<T>) => Promise.all([read(sqlite), read(pg)])

  test('config: the same config written, read back and versioned alike; a tier in use is refused by both', async () => {
    const config = loadGatewayConfig(null, providerKinds)
    const [fromSqlite, fromPg] = await both((stores) => stores.config.apply(config, 1_700_000_000_000, (stored) => stored))
    expect(fromPg.routing).toEqual(fromSqlite.routing)
    expect(fromPg.settings).toEqual(fromSqlite.settings)
    const [readSqlite, readPg] = await both((stores) => stores.config.read())
    expect(readPg).toEqual(readSqlite)
    const [v1, v2] = await both((stores) => stores.config.version())
    expect(v2).toBe(v1)
    const free = config.tiers[0]!.name
    await both((stores) => new KeyService(stores.keys, null).create({ name: 'holds a tier', tier: free }))
    const without = { ...config, tiers: config.tiers.slice(1) }
    const [refusedSqlite, refusedPg] = await both((stores) => stores.config.apply(without, 0, () => null).catch((error: GatewayError) => error))
    expect(refusedPg).toMatchObject({ code: 'tier_in_use', param: `tiers.${free}`, message: (refusedSqlite as GatewayError).message })
    expect(await pg.config.version()).toBe(v2)
  })

  test('usage: the same entries folded give the same rows, series, day buckets and quota baselines', async () => {
    const random = seededRandom(7)
    const start = Date.UTC(2026, 9, 28, 22, 0, 0)
    const entries: UsageEntry[] = Array.from({ length: 600 }, () => ({
      keyId: `key_${Math.floor(random() * 4)}`,
      alias: ['local/echo', 'openai/fast'][Math.floor(random() * 2)]!,
      upstream: ['local', 'openai'][Math.floor(random() * 2)]!,
      error: random() < 0.1,
      promptTokens: Math.floor(random() * 500),
      completionTokens: Math.floor(random() * 900),
      costNanos: Math.floor(random() * 5_000_000),
      latencyMs: random() * 3000,
      at: start + Math.floor(random() * 6 * 86_400_000),
    }))
    // Folded in three parts, the last one twice: the fold point makes the repeat a no-op in both.
    for (const [seq, part] of [entries.slice(0, 200), entries.slice(200, 400), entries.slice(400)].entries()) {
      const totals = new UsageTotals()
      for (const entry of part) totals.add(entry)
      await both((stores) => stores.usage.fold('parity', (folded) => (folded >= seq + 1 ? null : { totals, seq: seq + 1 })))
      if (seq === 2) await both((stores) => stores.usage.fold('parity', (folded) => (folded >= seq + 1 ? null : { totals, seq: seq + 1 })))
    }
    const query = { from: '2026-10-28', to: '2026-11-04' }
    const [rowsSqlite, rowsPg] = await both((stores) => stores.usageReads.rows(query))
    expect(rowsPg).toEqual(rowsSqlite)
    expect(rowsSqlite.reduce((sum, row) => sum + row.requests, 0)).toBe(600)
    const from = start / 1000
    for (const step of [60, 3600, 86_400]) {
      const [a, b] = await both((stores) => stores.usageReads.minuteBuckets(step, from, from + 7 * 86_400, { keyId: 'key_1' }))
      expect(sortBuckets(b)).toEqual(sortBuckets(a))
    }
    const [daysSqlite, daysPg] = await both((stores) => stores.usageReads.dayBuckets('2026-10-28', '2026-11-03', { alias: 'openai/fast' }))
    expect(sortBuckets(daysPg)).toEqual(sortBuckets(daysSqlite))
    expect(await pg.quotaBaseline.dayUsage('key_2', '2026-10-30')).toEqual(await sqlite.quotaBaseline.dayUsage('key_2', '2026-10-30'))
    expect(await pg.quotaBaseline.monthUsage('key_3', '2026-11-01')).toEqual(await sqlite.quotaBaseline.monthUsage('key_3', '2026-11-01'))
    const [seedSqlite, seedPg] = await both((stores) => stores.quotaBaseline.allKeys('2026-11-02', '2026-11-01'))
    expect(seedPg).toEqual(seedSqlite)
    expect(seedSqlite.size).toBe(4)
    expect(await pg.usage.pruneMinutes(start + 3 * 86_400_000)).toBe(await sqlite.usage.pruneMinutes(start + 3 * 86_400_000))
  })

  test('request log: rows put, put again and changed are read back alike, nulls and every character kept', async () => {
    const start = Date.UTC(2026, 10, 1)
    const record = (i: number, note: string) => JSON.stringify({ id: `req_${i}`, note, text: 'quote " backslash \\ comma , braces {} NULL ünï 🦊' })
    // More rows than one statement takes: the put writes them in pieces, in one transaction.
    const rows: LogRow[] = Array.from({ length: 1500 }, (_, i) => ({
      uid: `uid_${i}`,
      id: `req_${i % 700}`,
      at: start + i * 1000,
      keyId: i % 3 === 0 ? null : `key_${i % 4}`,
      alias: i % 5 === 0 ? null : 'local/echo',
      upstream: i % 7 === 0 ? null : 'local',
      status: i % 11 === 0 ? 429 : 200,
      errorType: i % 11 === 0 ? 'rate_limit_error' : null,
      record: record(i, 'first'),
    }))
    await both((stores) => stores.requestLog.put(rows))
    // Folded again (another instance replayed the same journal), then one changed as its journal says.
    await both((stores) => stores.requestLog.put(rows.slice(0, 20)))
    const changed: LogRow = { ...rows[3]!, status: 502, errorType: 'upstream_error', record: record(3, 'changed') }
    await both((stores) => stores.requestLog.put([changed]))
    const [all, allPg] = await both((stores) => stores.requestLog.list({ limit: 5000 }))
    expect(allPg).toEqual(all)
    expect(all).toHaveLength(1500)
    expect(all.find((row) => row.uid === 'uid_3')).toEqual(changed)
    expect(all.find((row) => row.uid === 'uid_0')).toEqual(rows[0]!)
    const filtered = { keyId: 'key_1', status: { from: 200, to: 299 }, since: start + 100_000, limit: 50 }
    const [page, pagePg] = await both((stores) => stores.requestLog.list(filtered))
    expect(pagePg).toEqual(page)
    expect(page).toHaveLength(50)
    const [byId, byIdPg] = await both((stores) => stores.requestLog.get('req_5'))
    expect(byIdPg).toEqual(byId)
    expect(byId?.uid).toBe('uid_1405')
  })

  test('keys: written, found, versioned and listed alike; exactly one first key', async () => {
    const record = (id: string): KeyRecord => ({
      id,
      prefix: `sk-cg-${id}`.slice(0, 12),
      hash: `hash-${id}`,
      name: id,
      tier: 'pro',
      createdAt: 1_700_000_000_000 + id.length,
      expiresAt: null,
      revokedAt: null,
      requestsPerMinute: 5,
      tokensPerMinute: null,
      maxConcurrent: null,
      monthlyTokenQuota: null,
      dailyRequestQuota: 9_000_000_000,
      dailyBudgetNanos: 2_000_000_000_000,
      monthlyBudgetNanos: null,
    })
    const [before] = await both((stores) => stores.keys.version())
    expect(await both((stores) => stores.keys.insertFirst(record('first')))).toEqual([false, false])
    await both((stores) => stores.keys.insert(record('parity-key')))
    await both((stores) => stores.keys.update('parity-key', { revokedAt: 1_700_000_000_123 }))
    const [foundSqlite, foundPg] = await both((stores) => stores.keys.find('parity-key'))
    expect(foundPg).toEqual(foundSqlite)
    expect(foundPg).toMatchObject({ revokedAt: 1_700_000_000_123, dailyRequestQuota: 9_000_000_000, dailyBudgetNanos: 2_000_000_000_000 })
    const [listSqlite, listPg] = await both((stores) => stores.keys.list())
    expect(listPg.map((k) => k.name)).toEqual(listSqlite.map((k) => k.name))
    expect(await pg.keys.version()).toBeGreaterThan(before!)
  })
})

describeWithServers('the conversation store answers alike on SQLite and Postgres', ['postgres'], () => {
  let server: PostgresServer
  let sqlite: Stores
  let pg: Stores
  setup(async () => {
    server = await sharedPostgres()
    sqlite = openSqliteStores(':memory:')
    pg = await openPostgresStores(await server.createDatabase(), { applicationName: 'parity test', poolSize: 4 })
  })
  teardown(async () => {
    await Promise.all([sqlite?.close(), pg?.close()])
  })

  test('conversations: records, chains, claims, expiry, deletes and pruning alike', async () => {
    const [fromSqlite, fromPg] = await Promise.all([storeScenario(sqlite.conversations), storeScenario(pg.conversations)])
    expect(fromPg).toEqual(fromSqlite)
  })
})

/** Buckets in one order, whatever order the database returned them in. */
const sortBuckets = (buckets: BucketSums[]) => [...buckets].sort((a, b) => a.bucket - b.bucket)

/** SQLite reports a single-column INTEGER/TEXT primary key as nullable; Postgres makes every key column NOT NULL. */
function isPrimaryKeyOnly(db: Database, column: { table_name: string; column_name: string }): boolean {
  const info = db.query<{ name: string; pk: number }, []>(`SELECT name, pk FROM pragma_table_info('${column.table_name}')`).all()
  return info.some((c) => c.name === column.column_name && c.pk > 0)
}

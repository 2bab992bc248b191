import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import * as schema from '../db/schema'
import { MAX_KEY_PAGE } from '../src/auth/key-listing'
import type { KeyPageQuery } from '../src/auth/keys'
import { openPostgresStores } from '../src/storage/postgres'
import { pgKeyPageSelect } from '../src/storage/postgres/keys'
import { openPostgres } from '../src/storage/postgres/open'
import { openSqliteStores } from '../src/storage/sqlite'
import { keyPageSelect } from '../src/storage/sqlite/keys'
import type { Stores } from '../src/storage/types'
import { describeWithServers, type PostgresServer, sharedPostgres } from './support/servers'
import { tempDir } from './support/gateway'
import { seededName, seedKeys } from './support/many-keys'
import { type GatewayProcess, runCli, spawnGateway } from './support/process'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const ADMIN_KEY = 'listing-admin-key-0123456789'
const MANY = 50_000
const FEW = 50
/** The most one key record can weigh in a listing: its fields at their longest (a 100-character name, every limit set). */
const MAX_RECORD_BYTES = 1200

interface Listed {
  data: { id: string; name: string; prefix: string }[]
  next_cursor: string | null
}

describe('the key listing scales: 50,000 keys answer like 50', () => {
  const dir = tempDir()
  const manyDb = join(dir.path, 'many.sqlite')
  const fewDb = join(dir.path, 'few.sqlite')
  let many: GatewayProcess
  let few: GatewayProcess

  setup(async () => {
    await Promise.all([seedKeys(manyDb, MANY), seedKeys(fewDb, FEW)])
    const spawn = (db: string) => spawnGateway({ GATEWAY_DB: db, GATEWAY_ADMIN_KEY: ADMIN_KEY })
    ;[many, few] = await Promise.all([spawn(manyDb), spawn(fewDb)])
  })

  teardown(async () => {
    await Promise.all([many?.stop(), few?.stop()])
    dir[Symbol.dispose]()
  })

  const admin = (gateway: GatewayProcess, path: string, init: RequestInit = {}) =>
    fetch(`${gateway.url}${path}`, { ...init, headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' } })

  async function page(gateway: GatewayProcess, query: string): Promise<{ body: Listed; bytes: number }> {
    const response = await admin(gateway, `/admin/keys${query}`)
    expect(response.status).toBe(200)
    const text = await response.text()
    return { body: JSON.parse(text) as Listed, bytes: Buffer.byteLength(text) }
  }

  test('the query plan: a page walks the primary key from the cursor and stops, with no sort; a search reads the table once', () => {
    const sqlite = new Database(manyDb, { readonly: true })
    const db = Object.assign(drizzle(sqlite, { schema }), { $client: sqlite })
    const plan = (query: KeyPageQuery) => {
      const { sql, params } = keyPageSelect(db, query).toSQL()
      return sqlite
        .query<{ detail: string }, never[]>(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...(params as never[]))
        .map((row) => row.detail)
        .join('; ')
    }
    const first = plan({ after: null, limit: MAX_KEY_PAGE + 1, search: null })
    const next = plan({ after: 'key_8', limit: MAX_KEY_PAGE + 1, search: null })
    const searched = plan({ after: 'key_8', limit: MAX_KEY_PAGE + 1, search: 'user-4' })
    // The first page reads the id index in order and stops at the LIMIT; a later page starts at the
    // cursor (a SEARCH on the index). Neither sorts (no temp B-tree) nor reads the table in its own order.
    expect(first).toBe('SCAN api_keys USING INDEX sqlite_autoindex_api_keys_1')
    expect(next).toBe('SEARCH api_keys USING INDEX sqlite_autoindex_api_keys_1 (id>?)')
    // A search tests every row whatever the plan (a fragment matches anywhere in a name): one pass
    // over the table in its own order, keeping the first matches in a sort bounded by the LIMIT.
    expect(searched).toBe('SCAN api_keys; USE TEMP B-TREE FOR ORDER BY')
    sqlite.close()
  })

  test('GET /admin/keys: every page holds at most `limit` keys, and weighs as much with 50,000 keys as with 50', async () => {
    // The default page: 1000 of the 50,000, a cursor to the rest; all 50 of the 50, no cursor.
    const manyDefault = await page(many, '')
    const fewDefault = await page(few, '')
    expect(manyDefault.body.data.length).toBe(MAX_KEY_PAGE)
    expect(manyDefault.body.next_cursor).not.toBeNull()
    expect(fewDefault.body.data.length).toBe(FEW)
    expect(fewDefault.body.next_cursor).toBeNull()
    expect(manyDefault.bytes).toBeLessThanOrEqual(MAX_KEY_PAGE * MAX_RECORD_BYTES)

    // The page the dashboard asks for: the same number of keys, the same weight to within a record.
    const [manyPage, fewPage] = await Promise.all([page(many, '?limit=50'), page(few, '?limit=50')])
    expect(manyPage.body.data.length).toBe(50)
    expect(fewPage.body.data.length).toBe(50)
    expect(Math.abs(manyPage.bytes - fewPage.bytes)).toBeLessThanOrEqual(MAX_RECORD_BYTES)
    expect(manyPage.body.next_cursor).not.toBeNull()
    expect(fewPage.body.next_cursor).toBeNull()
  })

  test('following next_cursor lists every key once, in id order, while keys are created meanwhile', async () => {
    const seen = new Set<string>()
    let cursor: string | null = null
    let pages = 0
    let previous = ''
    const created: string[] = []
    do {
      const { body }: { body: Listed } = await page(many, `?limit=${MAX_KEY_PAGE}${cursor ? `&cursor=${cursor}` : ''}`)
      pages += 1
      for (const key of body.data) {
        expect(seen.has(key.id)).toBe(false)
        expect(key.id > previous).toBe(true)
        previous = key.id
        seen.add(key.id)
      }
      cursor = body.next_cursor
      // Two keys made between pages: they land anywhere in id order, before or after the cursor.
      if (pages % 10 === 0) {
        for (const name of [`meanwhile-${pages}-a`, `meanwhile-${pages}-b`]) {
          const response = await admin(many, '/admin/keys', { method: 'POST', body: JSON.stringify({ name, tier: 'free' }) })
          created.push(((await response.json()) as { id: string }).id)
        }
      }
    } while (cursor !== null)
    const createdSeen = created.filter((id) => seen.has(id)).length
    // Every seeded key once; of the keys made during the walk, some (those after the cursor) or none, never twice.
    expect(seen.size).toBe(MANY + createdSeen)
    expect(pages).toBeGreaterThanOrEqual(MANY / MAX_KEY_PAGE)
  }, 120_000)

  test('q finds a key among 50,000 by a fragment of its name, its prefix or its id, in any case', async () => {
    const byName = await page(many, `?q=${seededName(31_415).toUpperCase()}`)
    expect(byName.body.data.map((k) => k.name)).toEqual([seededName(31_415)])
    const { prefix, id } = byName.body.data[0]!
    expect((await page(many, `?q=${prefix}`)).body.data.map((k) => k.id)).toEqual([id])
    expect((await page(many, `?q=${id.slice(4, 14)}`)).body.data.map((k) => k.id)).toEqual([id])
    // LIKE's wildcards are plain characters: "%" matches no name.
    expect((await page(many, '?q=%25')).body.data).toEqual([])
    // A search pages like the whole listing: 100 names hold "user-314", in pages of 30.
    const first = await page(many, '?q=user-314&limit=30')
    expect(first.body.data.length).toBe(30)
    let total = first.body.data.length
    for (let cursor = first.body.next_cursor; cursor !== null;) {
      const next = await page(many, `?q=user-314&limit=30&cursor=${cursor}`)
      total += next.body.data.length
      cursor = next.body.next_cursor
    }
    expect(total).toBe(100)
  })

  test('a bad limit, cursor or q: 400 naming the parameter', async () => {
    for (const [query, param] of [
      ['?limit=0', 'limit'],
      ['?limit=1001', 'limit'],
      ['?limit=ten', 'limit'],
      ['?limit=1.5', 'limit'],
      ['?cursor=not*a*cursor', 'cursor'],
      ['?cursor=', 'cursor'],
      [`?q=${'x'.repeat(101)}`, 'q'],
    ] as const) {
      const response = await admin(few, `/admin/keys${query}`)
      expect(`${query} ${response.status}`).toBe(`${query} 400`)
      const body = (await response.json()) as { error: { type: string; param: string } }
      expect(body.error).toMatchObject({ type: 'invalid_request_error', param })
    }
  })

  test('the OpenAPI document describes the paged listing', async () => {
    const document = (await (await fetch(`${few.url}/swagger/json`)).json()) as {
      paths: Record<string, { get?: { parameters?: { name: string }[]; responses: Record<string, unknown> } }>
    }
    const get = document.paths['/admin/keys']!.get!
    expect(get.parameters!.map((p) => p.name).sort()).toEqual(['cursor', 'limit', 'q'])
    expect(JSON.stringify(get.responses['200'])).toContain('next_cursor')
  })

  test('keys list: a page for people with the command for the next, every key as one JSON array with --json', async () => {
    const env = { GATEWAY_DB: fewDb }
    const all = JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout) as { id: string }[]
    expect(all.length).toBe(FEW)
    expect(new Set(all.map((k) => k.id)).size).toBe(FEW)

    const firstPage = await runCli(['keys', 'list', '--limit', '20'], env)
    expect(firstPage.code).toBe(0)
    const lines = firstPage.stdout.trimEnd().split('\n')
    // A header, 20 keys, and the next page's command.
    expect(lines.length).toBe(22)
    const more = lines.at(-1)!.match(/^More keys: bun run cli keys list --cursor (\S+) --limit 20$/)
    expect(more).not.toBeNull()
    const rest = await runCli(['keys', 'list', '--limit', '40', '--cursor', more![1]!, '--json'], env)
    const restKeys = JSON.parse(rest.stdout) as { id: string }[]
    expect(restKeys.map((k) => k.id)).toEqual(all.slice(20).map((k) => k.id))
    expect(rest.stderr).toBe('')

    const searched = await runCli(['keys', 'list', '--search', seededName(7)], env)
    expect(searched.stdout).toContain(seededName(7))
    expect(searched.stdout.trimEnd().split('\n').length).toBe(2)
    const refused = await runCli(['keys', 'list', '--limit', '0'], env)
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('--limit must be a whole number from 1 to 1000')
  })
})

describeWithServers('the key listing on Postgres: the same pages as SQLite, and the primary key walked', ['postgres'], () => {
  const dir = tempDir()
  const sqlitePath = join(dir.path, 'parity.sqlite')
  let server: PostgresServer
  let url: string
  let sqlite: Stores
  let pgStores: Stores

  setup(async () => {
    server = await sharedPostgres()
    url = await server.createDatabase()
    await seedKeys(sqlitePath, MANY)
    // The same 50,000 rows copied into Postgres, 5000 to a statement.
    const database = await openPostgres(url, { applicationName: 'key listing test', poolSize: 2 })
    const file = new Database(sqlitePath, { readonly: true })
    const rows = file.query<Record<string, unknown>, []>('SELECT id, prefix, hash, name, tier, created_at FROM api_keys').all()
    file.close()
    for (let i = 0; i < rows.length; i += 5000) await database.sql`INSERT INTO api_keys ${database.sql(rows.slice(i, i + 5000) as never[])}`
    await database.sql`ANALYZE api_keys`
    await database.close()
    sqlite = openSqliteStores(sqlitePath)
    pgStores = await openPostgresStores(url, { applicationName: 'key listing test', poolSize: 2 })
  })

  teardown(async () => {
    await Promise.all([sqlite?.close(), pgStores?.close()])
    dir[Symbol.dispose]()
  })

  test('pages, cursors and searches give the same keys in the same order on both', async () => {
    const queries: KeyPageQuery[] = [
      { after: null, limit: MAX_KEY_PAGE + 1, search: null },
      { after: 'key_8', limit: 70, search: null },
      { after: null, limit: 200, search: 'USER-314' },
      { after: 'key_4', limit: 30, search: 'user-2_1' },
      { after: null, limit: 10, search: '%' },
      { after: null, limit: 10, search: 'sk-cg-0000' },
    ]
    for (const query of queries) {
      const [fromSqlite, fromPg] = await Promise.all([sqlite.keys.page(query), pgStores.keys.page(query)])
      expect(fromPg.map((k) => k.id)).toEqual(fromSqlite.map((k) => k.id))
      expect(fromPg.length).toBeLessThanOrEqual(query.limit)
    }
    // The underscore is literal: "user-2_1" is in no name.
    expect(await pgStores.keys.page({ after: null, limit: 10, search: 'user-2_1' })).toEqual([])
  })

  test('the query plan: a page is an index scan on the primary key, stopped by the LIMIT, with no sort', async () => {
    const database = await openPostgres(url, { applicationName: 'key listing plan', poolSize: 1 })
    try {
      for (const after of [null, 'key_8']) {
        const { sql, params } = pgKeyPageSelect(database.db, { after, limit: MAX_KEY_PAGE + 1, search: null }).toSQL()
        const plan = (await database.sql.unsafe(`EXPLAIN ${sql}`, params as never[])).map((row) => String(row['QUERY PLAN'])).join('\n')
        expect(plan).toMatch(/^Limit/)
        expect(plan).toContain('Index Scan using api_keys_pkey on api_keys')
        expect(plan).not.toContain('Sort')
        expect(plan).not.toContain('Seq Scan')
      }
    } finally {
      await database.close()
    }
  })
})

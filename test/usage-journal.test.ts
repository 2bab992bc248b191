import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { usageJournals } from '../db/schema'
import { openSqlite, type SqliteDatabase } from '../src/storage/sqlite/open'
import { SqliteUsageStore } from '../src/storage/sqlite/usage'
import { SqliteUsageReads } from '../src/storage/sqlite/usage-reads'
import type { UsageEntry } from '../src/usage/entry'
import { listJournals, UsageJournal } from '../src/usage/journal'
import { foldJournals, UsageRecorder } from '../src/usage/recorder'
import { UsageReports } from '../src/usage/reports'
import { ROOT, tempDir } from './support/gateway'
import { waitFor } from './support/wait'
import { TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const AT = Date.parse('2026-11-22T10:00:00Z')
const DAY = { from: '2026-11-22', to: '2026-11-22' }
const entry = (promptTokens: number): UsageEntry => ({
  keyId: 'k1',
  alias: 'a/one',
  upstream: 'up',
  error: false,
  promptTokens,
  completionTokens: 1,
  costNanos: promptTokens * 7,
  latencyMs: 3,
  at: AT,
})

/** One connection to a database file, with the usage store and reads on it. */
interface Connection extends SqliteDatabase {
  usage: SqliteUsageStore
  reads: SqliteUsageReads
}
function connect(path: string): Connection {
  const database = openSqlite(path)
  return Object.assign(database, { usage: new SqliteUsageStore(database.db), reads: new SqliteUsageReads(database.db) })
}

/** A server's view of a database file: its connection, its own journal and a recorder writing to it. */
async function open(path: string): Promise<{ storage: Connection; journal: UsageJournal; recorder: UsageRecorder }> {
  const storage = connect(path)
  const journal = UsageJournal.create(path)
  return { storage, journal, recorder: await UsageRecorder.open(storage.usage, journal, path) }
}
/** What is in the database (folded), nothing pending. */
const totals = async (storage: Connection) => (await new UsageReports(storage.reads, async () => {}).report(DAY)).totals
const foldPoints = (storage: Connection) => storage.db.select().from(usageJournals).all()

/** Journals `tokens` (one request each) in a process of its own, which is then killed with SIGKILL. */
async function killedWriter(path: string, tokens: number[], torn = false): Promise<string> {
  const proc = Bun.spawn(['bun', 'test/support/journal-writer.ts', path, ...tokens.map(String), ...(torn ? ['--torn'] : [])], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
  expect(proc.signalCode).toBe('SIGKILL')
  expect(code).not.toBe(0)
  return out.trim()
}

describe('usage journal', () => {
  test('a recorded entry is in the journal when record() resolves, and in SQLite after the fold', async () => {
    using dir = tempDir()
    const { storage, journal, recorder } = await open(join(dir.path, 'g.sqlite'))
    await Promise.all([recorder.record(entry(1)), recorder.record(entry(2))])
    // One write for the whole turn.
    expect(readFileSync(journal.path, 'utf8').trim().split('\n')).toHaveLength(1)
    expect((await totals(storage)).requests).toBe(0)
    await recorder.fold()
    expect(await totals(storage)).toMatchObject({ requests: 2, prompt_tokens: 3, completion_tokens: 2 })
    expect(readFileSync(journal.path, 'utf8')).toBe('')
    // A clean stop removes the file and then its fold point.
    await recorder.stop()
    expect(existsSync(journal.path)).toBe(false)
    expect(foldPoints(storage)).toEqual([])
    storage.close()
  })

  test('a process killed before its fold: the next one counts its journal once at start, a torn last line is skipped', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const killedJournal = await killedWriter(path, [1, 10, 100], true)
    expect(existsSync(killedJournal)).toBe(true)

    const next = await open(path)
    expect(await totals(next.storage)).toMatchObject({ requests: 3, prompt_tokens: 111 })
    // Folded and removed: nothing is left to count a second time.
    expect(existsSync(killedJournal)).toBe(false)
    await next.recorder.record(entry(1000))
    await next.recorder.stop()
    const again = await open(path)
    expect(await totals(again.storage)).toMatchObject({ requests: 4, prompt_tokens: 1111 })
    await again.recorder.stop()
    next.storage.close()
    again.storage.close()
  })

  test("two processes on one database each journal to their own file; a live process's fold removes a dead one's journal", async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const a = await open(path)
    const b = await open(path)
    expect(a.journal.path).not.toBe(b.journal.path)
    await Promise.all([a.recorder.record(entry(1)), b.recorder.record(entry(2))])
    await a.recorder.fold()
    await b.recorder.fold()
    expect(await totals(a.storage)).toMatchObject({ requests: 2, prompt_tokens: 3 })
    // b stops cleanly: only its own journal goes.
    await b.recorder.stop()
    expect(existsSync(b.journal.path)).toBe(false)
    expect(existsSync(a.journal.path)).toBe(true)

    const killedJournal = await killedWriter(path, [10, 20])
    const errors: unknown[] = []
    a.recorder.start((error) => errors.push(error), 10)
    await waitFor(() => !existsSync(killedJournal), "the live process to fold and remove the killed one's journal")
    expect(errors).toEqual([])
    expect(await totals(a.storage)).toMatchObject({ requests: 4, prompt_tokens: 33 })
    await a.recorder.stop()
    expect(listJournals(path)).toEqual([])
    a.storage.close()
    b.storage.close()
  })

  test('the journal of an earlier version is folded from its copied fold point, once, and removed', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const storage = connect(path)
    // As the upgrade migration leaves it: the old fold point under the id `legacy`; batch 1 was folded before.
    storage.db.insert(usageJournals).values({ journal: 'legacy', foldedSeq: 1 }).run()
    const line = (seq: number, tokens: number) => JSON.stringify([seq, [['k1', 'a/one', 'up', 0, tokens, 1, 3, AT]]])
    writeFileSync(`${path}.usage-log`, `${line(1, 1)}\n${line(2, 10)}\n${line(3, 100)}\n`)
    const server = await open(path)
    expect(await totals(server.storage)).toMatchObject({ requests: 2, prompt_tokens: 110 })
    expect(existsSync(`${path}.usage-log`)).toBe(false)
    expect(foldPoints(server.storage).map((row) => row.journal)).not.toContain('legacy')
    await server.recorder.stop()
    storage.close()
    server.storage.close()
  })

  test('a fold that fails (database locked) is reported, loses nothing, and the next one counts once', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const server = await open(path)
    server.storage.sqlite.run('PRAGMA busy_timeout = 0')
    const errors: unknown[] = []
    server.recorder.start((error) => errors.push(error), 20)
    const other = connect(path)
    other.sqlite.run('BEGIN IMMEDIATE')
    await server.recorder.record(entry(5))
    await waitFor(() => errors.length > 0, 'the fold to fail on the locked database')
    expect(String(errors[0])).toContain('locked')
    other.sqlite.run('COMMIT')
    await waitFor(async () => (await totals(other)).requests > 0, 'a later fold to count the entry')
    // Later folds find nothing new: the count stays exact.
    const failures = errors.length
    await server.recorder.fold()
    expect(errors.length).toBe(failures)
    expect(await totals(other)).toMatchObject({ requests: 1, prompt_tokens: 5 })
    await server.recorder.stop()
    other.close()
    server.storage.close()
  })

  test('the CLI folding while the server runs counts nothing twice', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const server = await open(path)
    const cli = connect(path)
    await server.recorder.record(entry(1))
    await server.recorder.record(entry(2))
    await foldJournals(cli.usage, path)
    expect(await totals(cli)).toMatchObject({ requests: 2, prompt_tokens: 3 })
    // The server's journal is the server's: the CLI folds it but leaves it in place.
    expect(existsSync(server.journal.path)).toBe(true)
    // Folding again finds nothing new.
    await foldJournals(cli.usage, path)
    expect(await totals(cli)).toMatchObject({ requests: 2, prompt_tokens: 3 })
    await server.recorder.record(entry(4))
    await server.recorder.fold()
    expect(await totals(server.storage)).toMatchObject({ requests: 3, prompt_tokens: 7 })
    await server.recorder.record(entry(8))
    await foldJournals(cli.usage, path)
    await server.recorder.stop()
    expect(await totals(cli)).toMatchObject({ requests: 4, prompt_tokens: 15 })
    cli.close()
    server.storage.close()
  })
})

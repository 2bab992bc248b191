import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { usageJournals } from '../db/schema'
import { openStorage, type Storage } from '../src/db'
import { listJournals, UsageJournal } from '../src/usage/journal'
import { foldJournals, queryUsage, type UsageEntry, UsageRecorder } from '../src/usage/recorder'
import { ROOT, tempDir } from './support/gateway'

const AT = Date.parse('2026-11-22T10:00:00Z')
const DAY = { from: '2026-11-22', to: '2026-11-22' }
const entry = (promptTokens: number): UsageEntry => ({
  keyId: 'k1',
  alias: 'a/one',
  upstream: 'up',
  error: false,
  promptTokens,
  completionTokens: 1,
  latencyMs: 3,
  at: AT,
})

/** A server's view of a database file: its storage, its own journal and a recorder writing to it. */
function open(path: string): { storage: Storage; journal: UsageJournal; recorder: UsageRecorder } {
  const storage = openStorage(path)
  const journal = UsageJournal.create(path)
  return { storage, journal, recorder: new UsageRecorder(storage.db, journal, path) }
}
const totals = (storage: Storage) => queryUsage(storage.db, DAY).totals
const foldPoints = (storage: Storage) => storage.db.select().from(usageJournals).all()

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
    const { storage, journal, recorder } = open(join(dir.path, 'g.sqlite'))
    await Promise.all([recorder.record(entry(1)), recorder.record(entry(2))])
    // One write for the whole turn.
    expect(readFileSync(journal.path, 'utf8').trim().split('\n')).toHaveLength(1)
    expect(totals(storage).requests).toBe(0)
    recorder.fold()
    expect(totals(storage)).toMatchObject({ requests: 2, prompt_tokens: 3, completion_tokens: 2 })
    expect(readFileSync(journal.path, 'utf8')).toBe('')
    // A clean stop removes the file and then its fold point.
    recorder.stop()
    expect(existsSync(journal.path)).toBe(false)
    expect(foldPoints(storage)).toEqual([])
    storage.close()
  })

  test('a process killed before its fold: the next one counts its journal once at start, a torn last line is skipped', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const killedJournal = await killedWriter(path, [1, 10, 100], true)
    expect(existsSync(killedJournal)).toBe(true)

    const next = open(path)
    expect(totals(next.storage)).toMatchObject({ requests: 3, prompt_tokens: 111 })
    // Folded and removed: nothing is left to count a second time.
    expect(existsSync(killedJournal)).toBe(false)
    await next.recorder.record(entry(1000))
    next.recorder.stop()
    const again = open(path)
    expect(totals(again.storage)).toMatchObject({ requests: 4, prompt_tokens: 1111 })
    again.recorder.stop()
    next.storage.close()
    again.storage.close()
  })

  test("two processes on one database each journal to their own file; a live process's fold removes a dead one's journal", async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const a = open(path)
    const b = open(path)
    expect(a.journal.path).not.toBe(b.journal.path)
    await Promise.all([a.recorder.record(entry(1)), b.recorder.record(entry(2))])
    a.recorder.fold()
    b.recorder.fold()
    expect(totals(a.storage)).toMatchObject({ requests: 2, prompt_tokens: 3 })
    // b stops cleanly: only its own journal goes.
    b.recorder.stop()
    expect(existsSync(b.journal.path)).toBe(false)
    expect(existsSync(a.journal.path)).toBe(true)

    const killedJournal = await killedWriter(path, [10, 20])
    const errors: unknown[] = []
    a.recorder.start((error) => errors.push(error), 10)
    while (existsSync(killedJournal)) await Bun.sleep(5)
    expect(errors).toEqual([])
    expect(totals(a.storage)).toMatchObject({ requests: 4, prompt_tokens: 33 })
    a.recorder.stop()
    expect(listJournals(path)).toEqual([])
    a.storage.close()
    b.storage.close()
  })

  test('the journal of an earlier version is folded from its copied fold point, once, and removed', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const storage = openStorage(path)
    // As the upgrade migration leaves it: the old fold point under the id `legacy`; batch 1 was folded before.
    storage.db.insert(usageJournals).values({ journal: 'legacy', foldedSeq: 1 }).run()
    const line = (seq: number, tokens: number) => JSON.stringify([seq, [['k1', 'a/one', 'up', 0, tokens, 1, 3, AT]]])
    writeFileSync(`${path}.usage-log`, `${line(1, 1)}\n${line(2, 10)}\n${line(3, 100)}\n`)
    const server = open(path)
    expect(totals(server.storage)).toMatchObject({ requests: 2, prompt_tokens: 110 })
    expect(existsSync(`${path}.usage-log`)).toBe(false)
    expect(foldPoints(server.storage).map((row) => row.journal)).not.toContain('legacy')
    server.recorder.stop()
    storage.close()
    server.storage.close()
  })

  test('a fold that fails (database locked) is reported, loses nothing, and the next one counts once', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const server = open(path)
    server.storage.sqlite.run('PRAGMA busy_timeout = 0')
    const errors: unknown[] = []
    server.recorder.start((error) => errors.push(error), 20)
    const other = openStorage(path)
    other.sqlite.run('BEGIN IMMEDIATE')
    await server.recorder.record(entry(5))
    while (errors.length === 0) await Bun.sleep(5)
    expect(String(errors[0])).toContain('locked')
    other.sqlite.run('COMMIT')
    while (totals(other).requests === 0) await Bun.sleep(5)
    // Later folds find nothing new: the count stays exact.
    const failures = errors.length
    server.recorder.fold()
    expect(errors.length).toBe(failures)
    expect(totals(other)).toMatchObject({ requests: 1, prompt_tokens: 5 })
    server.recorder.stop()
    other.close()
    server.storage.close()
  })

  test('the CLI folding while the server runs counts nothing twice', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const server = open(path)
    const cli = openStorage(path)
    await server.recorder.record(entry(1))
    await server.recorder.record(entry(2))
    foldJournals(cli.db, path)
    expect(totals(cli)).toMatchObject({ requests: 2, prompt_tokens: 3 })
    // The server's journal is the server's: the CLI folds it but leaves it in place.
    expect(existsSync(server.journal.path)).toBe(true)
    // Folding again finds nothing new.
    foldJournals(cli.db, path)
    expect(totals(cli)).toMatchObject({ requests: 2, prompt_tokens: 3 })
    await server.recorder.record(entry(4))
    server.recorder.fold()
    expect(totals(server.storage)).toMatchObject({ requests: 3, prompt_tokens: 7 })
    await server.recorder.record(entry(8))
    foldJournals(cli.db, path)
    server.recorder.stop()
    expect(totals(cli)).toMatchObject({ requests: 4, prompt_tokens: 15 })
    cli.close()
    server.storage.close()
  })
})

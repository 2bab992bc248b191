import { describe, expect, test } from 'bun:test'
import { appendFileSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { openStorage, type Storage } from '../src/db'
import { UsageJournal } from '../src/usage/journal'
import { foldJournal, queryUsage, type UsageEntry, UsageRecorder } from '../src/usage/recorder'
import { tempDir } from './support/gateway'

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

/** A server's view of a database file: its storage and a recorder with a journal. */
function open(path: string): { storage: Storage; recorder: UsageRecorder } {
  const storage = openStorage(path)
  return { storage, recorder: new UsageRecorder(storage.db, new UsageJournal(storage.journalPath!)) }
}
const totals = (storage: Storage) => queryUsage(storage.db, DAY).totals

describe('usage journal', () => {
  test('a recorded entry is in the journal when record() resolves, and in SQLite after the fold', async () => {
    using dir = tempDir()
    const { storage, recorder } = open(join(dir.path, 'g.sqlite'))
    await Promise.all([recorder.record(entry(1)), recorder.record(entry(2))])
    // One write for the whole turn.
    expect(readFileSync(storage.journalPath!, 'utf8').trim().split('\n')).toHaveLength(1)
    expect(totals(storage).requests).toBe(0)
    recorder.fold()
    expect(totals(storage)).toMatchObject({ requests: 2, prompt_tokens: 3, completion_tokens: 2 })
    expect(readFileSync(storage.journalPath!, 'utf8')).toBe('')
    recorder.stop()
    storage.close()
  })

  test('a process killed before its fold: the next one counts the journal once, a torn last line is skipped', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const killed = open(path)
    await killed.recorder.record(entry(1))
    killed.recorder.fold()
    await killed.recorder.record(entry(10))
    await killed.recorder.record(entry(100))
    // What an OS crash in the middle of a write could leave behind.
    appendFileSync(killed.storage.journalPath!, '[9,[["k1","a/one"')
    // No fold, no stop: as after SIGKILL.

    const next = open(path)
    expect(totals(next.storage)).toMatchObject({ requests: 3, prompt_tokens: 111 })
    expect(readFileSync(next.storage.journalPath!, 'utf8')).toBe('')
    await next.recorder.record(entry(1000))
    next.recorder.stop()
    expect(totals(next.storage)).toMatchObject({ requests: 4, prompt_tokens: 1111 })
    next.storage.close()
    killed.storage.close()
  })

  test('a torn line with nothing new before it is cleared at start, so later batches stay readable', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const first = open(path)
    await first.recorder.record(entry(1))
    first.recorder.stop()
    appendFileSync(first.storage.journalPath!, '[9,[["k1"')
    // Started over a torn line and nothing unfolded, then killed after one more request.
    const second = open(path)
    await second.recorder.record(entry(10))
    // A third start, and the CLI, both see the second one's request.
    const cli = openStorage(path)
    foldJournal(cli.db, cli.journalPath)
    expect(totals(cli)).toMatchObject({ requests: 2, prompt_tokens: 11 })
    const third = open(path)
    expect(totals(third.storage)).toMatchObject({ requests: 2, prompt_tokens: 11 })
    third.recorder.stop()
    for (const s of [first.storage, second.storage, third.storage, cli]) s.close()
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
    await Bun.sleep(60)
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
    foldJournal(cli.db, cli.journalPath)
    expect(totals(cli)).toMatchObject({ requests: 2, prompt_tokens: 3 })
    // Folding again finds nothing new.
    foldJournal(cli.db, cli.journalPath)
    expect(totals(cli)).toMatchObject({ requests: 2, prompt_tokens: 3 })
    await server.recorder.record(entry(4))
    server.recorder.fold()
    expect(totals(server.storage)).toMatchObject({ requests: 3, prompt_tokens: 7 })
    await server.recorder.record(entry(8))
    foldJournal(cli.db, cli.journalPath)
    server.recorder.stop()
    expect(totals(cli)).toMatchObject({ requests: 4, prompt_tokens: 15 })
    cli.close()
    server.storage.close()
  })
})

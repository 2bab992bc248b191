/**
 * The request log's journal file under sustained load: its writer (a thread of its own for a SQLite
 * file) writes while requests keep appending, so a fold seldom ends with nothing appended during
 * it. The file must still stay bounded, and every row must reach the store exactly once.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { type LogRow, logRowOf } from '../../src/request-log/entry'
import { AppendLog } from '../../src/journal/append-log'
import { RequestJournal, rowsInText } from '../../src/request-log/journal'
import type { JournalRange, RequestLogStore, RequestWriter } from '../../src/request-log/store'
import { tempDir } from '../support/gateway'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const ROTATE_AT = 64 * 1024

let made = 0
const rows = (count: number): LogRow[] =>
  Array.from({ length: count }, () => {
    const id = `req_${++made}`
    return logRowOf(`uid-${made}`, made, {
      id,
      api: 'chat',
      method: 'POST',
      path: '/v1/chat/completions',
      status: 200,
      latency_ms: 1,
      prompt_tokens: 0,
      completion_tokens: 0,
      cost_usd: 0,
    })
  })

/**
 * A writer that reads each range from the file, as the SQLite writer thread does, and counts each
 * row it writes. While it writes, requests answered meanwhile append `appendDuring` rows to the
 * journal; `failNext` makes the next write fail (the database locked) before it reads anything.
 */
function readingWriter(journal: () => RequestJournal) {
  const state = { appendDuring: 0, failNext: false, written: new Map<string, number>() }
  const writer: RequestWriter = {
    add() {},
    async flush(range: JournalRange | null) {
      if (range === null) return
      if (state.failNext) {
        state.failNext = false
        throw new Error('database is locked')
      }
      const text = readFileSync(range.path).subarray(range.from, range.to).toString()
      for (const row of rowsInText(text)) state.written.set(row.uid, (state.written.get(row.uid) ?? 0) + 1)
      if (state.appendDuring > 0) journal().append(rows(state.appendDuring))
    },
    close() {},
  }
  return { writer, state }
}

/** A journal retired at `rotateAtBytes`, whose writer sees `appendDuring` rows appended while it writes; `first`: the rows made before it. */
function openJournal(dir: string, rotateAtBytes: number, appendDuring: number) {
  const first = made
  let journal: RequestJournal | null = null
  const { writer, state } = readingWriter(() => journal!)
  const store = { writer: () => writer, put: async () => {} } as unknown as RequestLogStore
  journal = RequestJournal.open(join(dir, 'g.sqlite'), store, rotateAtBytes)
  state.appendDuring = appendDuring
  return { journal, state, first }
}

const journalFiles = (dir: string) => readdirSync(dir).filter((name) => name.includes('.requests-') && name.endsWith('.log'))
const journalBytes = (dir: string) => journalFiles(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0)
const writtenOnce = (written: Map<string, number>) => [...written.values()].every((times) => times === 1)

/** Once appends stop, two folds write the rest: the files are empty, every row made since `first` written once, and removing leaves none. */
async function endsClean(dir: string, journal: RequestJournal, state: ReturnType<typeof readingWriter>['state'], first: number): Promise<void> {
  state.appendDuring = 0
  await journal.fold()
  await journal.fold()
  expect(journalBytes(dir)).toBe(0)
  expect(state.written.size).toBe(made - first)
  expect(writtenOnce(state.written)).toBe(true)
  journal.remove()
  expect(journalFiles(dir)).toEqual([])
}

test('the request log journal stays bounded when appends arrive during every fold, and each row is written once', async () => {
  using dir = tempDir()
  const { journal, state, first } = openJournal(dir.path, ROTATE_AT, 20)
  let largest = 0
  for (let fold = 0; fold < 200; fold++) {
    journal.append(rows(20))
    await journal.fold()
    largest = Math.max(largest, journalBytes(dir.path))
  }
  // About 175 bytes a row, 8,000 rows: 1.4 MB, had the file only grown.
  expect(largest).toBeLessThan(3 * ROTATE_AT)
  await endsClean(dir.path, journal, state, first)
})

test('a retired journal whose write failed is kept, written by the next fold, and only then deleted', async () => {
  using dir = tempDir()
  const { journal, state, first } = openJournal(dir.path, 1, 1)
  journal.append(rows(3))
  await journal.fold()
  // Long enough, and a row came during the write: retired, and appends go to a fresh file.
  expect(journalFiles(dir.path)).toHaveLength(2)
  state.failNext = true
  await expect(journal.fold()).rejects.toThrow('database is locked')
  expect(journalFiles(dir.path)).toHaveLength(2)
  await journal.fold()
  expect(journalFiles(dir.path)).toHaveLength(1)
  await endsClean(dir.path, journal, state, first)
})

test('a fresh journal that cannot be made (no descriptor left) fails no fold: appends go on to the old file, and a later fold retires it', async () => {
  using dir = tempDir()
  const { journal, state, first } = openJournal(dir.path, 1, 1)
  const create = AppendLog.create
  AppendLog.create = () => {
    throw new Error('EMFILE: too many open files')
  }
  try {
    journal.append(rows(3))
    await journal.fold()
    expect(journalFiles(dir.path)).toHaveLength(1)
  } finally {
    AppendLog.create = create
  }
  await journal.fold()
  expect(journalFiles(dir.path)).toHaveLength(2)
  await endsClean(dir.path, journal, state, first)
})

test('removing the journal after a fold that rows came during keeps its file: they are not written yet, and the next start folds them', async () => {
  using dir = tempDir()
  const { journal } = openJournal(dir.path, 1024 * 1024, 2)
  journal.append(rows(3))
  await journal.fold()
  journal.remove()
  const [file] = journalFiles(dir.path)
  const kept = rowsInText(readFileSync(join(dir.path, file!), 'utf8')).map((row) => row.uid)
  expect(kept.slice(-2)).toEqual([`uid-${made - 1}`, `uid-${made}`])
})

/**
 * When the response cache's table is written. A SQLite table is written on the event loop, so a
 * batch must stay small: answers wait for the next flush (every 50 ms), or for the next turn once
 * FLUSH_AT_BYTES of them wait. The table here records the batches it is given.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import type { CachedAnswer } from '../../src/cache/store'
import { type CacheTable, FLUSH_AT_BYTES, TableCacheStore } from '../../src/cache/table-store'
import { TEST_MS } from '../support/hooks'
import { twoTurns } from '../support/wait'

setDefaultTimeout(TEST_MS)

const answer = (chars: number): CachedAnswer => ({
  body: JSON.stringify({ text: 'x'.repeat(chars) }),
  usage: null,
  costNanos: 1,
  createdAt: 0,
  expiresAt: Number.MAX_SAFE_INTEGER,
})

function recordingTable(): { table: CacheTable; batches: string[][] } {
  const batches: string[][] = []
  const table: CacheTable = {
    read: () => null,
    write: (batch) => void batches.push(batch.map(([key]) => key)),
    close() {},
  }
  return { table, batches }
}

test('large answers are written once FLUSH_AT_BYTES of them wait, in the next turn, not in one batch at the timer', async () => {
  // Regression: answers of up to max_entry_bytes each made one batch per 50 ms, written on the event loop at about 4 µs a KiB.
  const { table, batches } = recordingTable()
  // The timer an hour away: only the byte bound writes within the test.
  const store = new TableCacheStore(table, [], 100, 2 * FLUSH_AT_BYTES, 3_600_000)
  store.put('a', answer(FLUSH_AT_BYTES / 3))
  store.put('b', answer(FLUSH_AT_BYTES / 3))
  await twoTurns()
  expect(batches).toEqual([])
  // Replacing an entry counts its new size, not both.
  store.put('b', answer(FLUSH_AT_BYTES / 3))
  await twoTurns()
  expect(batches).toEqual([])
  store.put('c', answer(FLUSH_AT_BYTES / 3))
  await twoTurns()
  expect(batches).toEqual([['a', 'b', 'c']])
  // The batch took its bytes with it: a small answer after it waits for the timer (here, the close).
  store.put('d', answer(10))
  await twoTurns()
  expect(batches).toHaveLength(1)
  await store.close()
  expect(batches).toEqual([['a', 'b', 'c'], ['d']])
  expect(store.get('c', 0)).toMatchObject({ costNanos: 1 })
})

test('batches are written one at a time, in order: a slow write (Postgres) is not overtaken by the next batch', async () => {
  // Regression: a newer answer (or an entry's removal) written on the pool's other connection first was undone by the older batch.
  const started: string[][] = []
  let release = () => {}
  const table: CacheTable = {
    read: () => null,
    write: (batch) => {
      started.push(batch.map(([key]) => key))
      return new Promise<void>((resolve) => (release = resolve))
    },
    close() {},
  }
  const store = new TableCacheStore(table, [], 100, 2 * FLUSH_AT_BYTES, 3_600_000)
  store.put('k', answer(FLUSH_AT_BYTES))
  await twoTurns()
  expect(started).toEqual([['k']])
  // A newer answer under the same key while the first write runs: its batch waits for it.
  store.put('k', answer(FLUSH_AT_BYTES))
  await twoTurns()
  expect(started).toEqual([['k']])
  release()
  await twoTurns()
  expect(started).toEqual([['k'], ['k']])
  release()
  await store.close()
})

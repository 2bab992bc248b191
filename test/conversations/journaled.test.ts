import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Conversations } from '../../src/conversations/conversations'
import { FOLD_AT_BYTES, FOLD_AT_RECORDS, JournaledConversationStore } from '../../src/conversations/journaled'
import { type EncodedRecord, encodedRecord } from '../../src/conversations/store'
import type { ThreadTurn } from '../../src/conversations/threads'
import { openSqliteStores } from '../../src/storage/sqlite'
import { SqliteConversationStore } from '../../src/storage/sqlite/conversations'
import { openSqlite, type SqliteDatabase } from '../../src/storage/sqlite/open'
import { DAY_MS } from '../../src/time'
import type { MessagesRequest } from '../../src/wire/anthropic/types'
import { tempDir } from '../support/gateway'
import { TEST_MS } from '../support/hooks'
import { twoTurns, waitFor } from '../support/wait'
import { storeScenario, T0, turn } from './store-scenario'

setDefaultTimeout(TEST_MS)

/** A process's view of a database file: its connection, the SQLite store, and the journaled store in front of it. */
interface Opened {
  database: SqliteDatabase
  sqlite: SqliteConversationStore
  store: JournaledConversationStore
  /** Rows in the database itself, whatever is still journaled. */
  rows(): string[]
  close(): void
}

async function open(path: string): Promise<Opened> {
  const database = openSqlite(path)
  const sqlite = new SqliteConversationStore(database.db)
  const store = await JournaledConversationStore.open(sqlite, path)
  const rows = () =>
    database.sqlite
      .query<{ id: string }, []>('SELECT id FROM conversations ORDER BY id')
      .all()
      .map((row) => row.id)
  return { database, sqlite, store, rows, close: () => database.close() }
}

const journals = (dir: string) => readdirSync(dir).filter((name) => name.includes('.conversations-') && name.endsWith('.log'))
const k1 = (id: string) => ({ keyId: 'k1', id })

/** A store folding in the background whose timer never fires within a test: only the count starts folds. Its fold failures are listed. */
async function countFolding(dir: string): Promise<Opened & { failures: unknown[] }> {
  const opened = await open(join(dir, 'g.sqlite'))
  const failures: unknown[] = []
  opened.store.start((error) => failures.push(error), 3_600_000)
  return { ...opened, failures }
}

/** FOLD_AT_RECORDS record ids, sorting as they were made. */
const recordIds = (prefix: string) => Array.from({ length: FOLD_AT_RECORDS }, (_, i) => `${prefix}${String(i).padStart(4, '0')}`)

describe('the journaled conversation store (SQLite)', () => {
  test('a record put is read back at once, before any fold; the fold writes it to the database and empties the journal', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const a = await open(path)
    // Three puts in one turn: one write, one line.
    expect(await Promise.all([a.store.put(turn('r1', null)), a.store.put(turn('r2', 'r1')), a.store.put(turn('x', null))])).toEqual([true, true, true])
    const [journal] = journals(dir.path)
    expect(readFileSync(join(dir.path, journal!), 'utf8').trim().split('\n')).toHaveLength(1)
    expect(a.rows()).toEqual([])

    expect(await a.store.get(k1('r1'), T0)).toMatchObject({ id: 'r1', continuedBy: 'r2', answer: turn('r1', null).answer })
    expect(await a.store.head(k1('r2'), T0)).toMatchObject({ parentId: 'r1', continuedBy: null })
    expect(await a.store.head({ keyId: 'k2', id: 'r1' }, T0)).toBeNull()
    expect((await a.store.chain(k1('r2'), T0))?.map((record) => record.id)).toEqual(['r1', 'r2'])
    expect(await a.store.get(k1('r1'), T0 + 1000)).toBeNull()
    // A read is a copy, as one from the database: changing it changes nothing stored.
    ;((await a.store.get(k1('x'), T0))!.answer as { content: unknown[] }).content.length = 0
    expect(await a.store.get(k1('x'), T0)).toMatchObject({ answer: turn('x', null).answer })

    await a.store.fold()
    expect(a.rows()).toEqual(['r1', 'r2', 'x'])
    expect(readFileSync(join(dir.path, journal!), 'utf8')).toBe('')
    expect(await a.sqlite.head(k1('r1'), T0)).toMatchObject({ continuedBy: 'r2' })
    await a.store.stop()
    expect(journals(dir.path)).toEqual([])
    a.close()
  })

  test('a chain spanning folded and unfolded turns is whole, with what the later turns did to the earlier ones', async () => {
    using dir = tempDir()
    const a = await open(join(dir.path, 'g.sqlite'))
    await a.store.put(turn('t1', null))
    await a.store.put(turn('t2', 't1'))
    await a.store.fold()
    expect(a.rows()).toEqual(['t1', 't2'])
    // Unfolded, after a folded parent: a later turn that keeps the whole history alive longer.
    await a.store.put(turn('t3', 't2', { expiresAt: T0 + 5000 }))
    await a.store.put(turn('t4', 't3', { expiresAt: T0 + 5000 }))
    expect(await a.store.head(k1('t4'), T0)).toMatchObject({ parentId: 't3' })
    const chain = await a.store.chain(k1('t4'), T0 + 2000)
    expect(chain?.map((record) => [record.id, record.expiresAt])).toEqual([
      ['t1', T0 + 5000],
      ['t2', T0 + 5000],
      ['t3', T0 + 5000],
      ['t4', T0 + 5000],
    ])
    // Its earlier turns are marked continued by the later ones.
    expect((await a.store.head(k1('t2'), T0))?.continuedBy).toBe('t3')
    await a.store.put(turn('t5', 't4', { expiresAt: T0 + 5000 }))
    expect((await a.store.chain(k1('t5'), T0))?.map((record) => record.id)).toEqual(['t1', 't2', 't3', 't4', 't5'])
    expect((await a.store.head(k1('t4'), T0))?.continuedBy).toBe('t5')
    await a.store.stop()
    expect(a.rows()).toEqual(['t1', 't2', 't3', 't4', 't5'])
    a.close()
  })

  test('every operation reads and writes as the SQLite store written at once does', async () => {
    using dir = tempDir()
    const a = await open(join(dir.path, 'g.sqlite'))
    const plain = openSqliteStores(':memory:')
    const [journaled, direct] = [await storeScenario(a.store), await storeScenario(plain.conversations)]
    expect(journaled).toEqual(direct)
    await a.store.stop()
    a.close()
    await plain.close()
  })

  test('claims and releases of a record not folded yet: folded first, one continue at a time', async () => {
    using dir = tempDir()
    const a = await open(join(dir.path, 'g.sqlite'))
    await a.store.put(turn('c1', null))
    expect(await a.store.claim(k1('c1'), T0, T0 + 100)).toBe('claimed')
    expect(a.rows()).toEqual(['c1'])
    expect(await a.store.claim(k1('c1'), T0 + 1, T0 + 101)).toBe('in_flight')
    await a.store.release(k1('c1'), T0 + 100)
    expect(await a.store.claim(k1('c1'), T0 + 2, T0 + 102)).toBe('claimed')
    await a.store.put(turn('c2', 'c1'))
    expect(await a.store.claim(k1('c1'), T0 + 3, T0 + 103)).toBe('continued')
    expect(await a.store.delete(k1('c2'))).toBe(true)
    expect(await a.store.head(k1('c2'), T0)).toBeNull()
    await a.store.stop()
    a.close()
  })

  test('message threads over it: continued from turns not folded yet, once each, one continue at a time', async () => {
    using dir = tempDir()
    const a = await open(join(dir.path, 'g.sqlite'))
    const threads = new Conversations(a.store, { ttlMs: () => DAY_MS, now: () => T0, claimMs: 60_000 })
    const ask = (content: string, thread: MessagesRequest['thread']): MessagesRequest =>
      ({ model: 'openai/fast', max_tokens: 10, messages: [{ role: 'user', content }], thread }) as MessagesRequest
    const answer = (id: string) => ({ id, content: [{ type: 'text' as const, text: `answer ${id}` }] })
    const create = await threads.beginThread(ask('first', { type: 'create' }), 'k')
    expect(await create!.record(answer('m1'), 'openai', false)).toBe(true)
    const [one, two] = await Promise.allSettled([
      threads.beginThread(ask('second', { type: 'continue', previous_message_id: 'm1' }), 'k'),
      threads.beginThread(ask('second', { type: 'continue', previous_message_id: 'm1' }), 'k'),
    ])
    expect([one.status, two.status].sort()).toEqual(['fulfilled', 'rejected'])
    expect(((one.status === 'rejected' ? one : two) as PromiseRejectedResult).reason).toMatchObject({ code: 'thread_continue_in_flight' })
    const next = ((one.status === 'fulfilled' ? one : two) as PromiseFulfilledResult<ThreadTurn | null>).value!
    expect(await next.record(answer('m2'), 'openai', false)).toBe(true)
    // m2 is only in memory, its parent in the database: the history spans both.
    const third = await threads.beginThread(ask('third', { type: 'continue', previous_message_id: 'm2' }), 'k')
    expect(third!.requestFor(false).request.messages.map((message) => message.content)).toEqual([
      'first',
      [{ type: 'text', text: 'answer m1' }],
      'second',
      [{ type: 'text', text: 'answer m2' }],
      'third',
    ])
    await third!.release()
    await expect(threads.beginThread(ask('again', { type: 'continue', previous_message_id: 'm1' }), 'k')).rejects.toMatchObject({
      code: 'thread_already_continued',
    })
    await a.store.stop()
    a.close()
  })

  test('another process on the same file sees a record once it is folded; a killed process journal is folded at start, a torn line skipped', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const a = await open(path)
    const b = await open(path)
    await a.store.put(turn('shared', null))
    expect(await b.store.head(k1('shared'), T0)).toBeNull()
    await a.store.fold()
    expect(await b.store.head(k1('shared'), T0)).toMatchObject({ id: 'shared' })
    await b.store.stop()
    b.close()

    // What a process killed before its fold leaves: its journal, unlocked, its last line torn.
    const row = (id: string, parent: string | null) =>
      `${JSON.stringify(['k1', id, 'response', null, parent, T0, T0 + 1000]).slice(0, -1)},{"input":[]},{"output":["${id}"]}]`
    const orphan = `${path}.conversations-999999-deadbeef.log`
    writeFileSync(orphan, `[1,[${row('o1', null)}]]\n[2,[${row('o2', 'o1')}]]\n[3,[["k1","o3"`)
    const c = await open(path)
    expect(existsSync(orphan)).toBe(false)
    expect((await c.store.chain(k1('o2'), T0))?.map((record) => record.answer)).toEqual([{ output: ['o1'] }, { output: ['o2'] }])
    expect(await c.store.head(k1('o3'), T0)).toBeNull()
    // A's own journal is still locked by it: not an orphan, left alone.
    expect(journals(dir.path)).toHaveLength(2)
    await Promise.all([a.store.stop(), c.store.stop()])
    expect(journals(dir.path)).toEqual([])
    expect(a.database.sqlite.query('SELECT journal FROM usage_journals').all()).toEqual([])
    a.close()
    c.close()
  })

  test('a journal folded but not yet emptied when its process died: only what is past its fold point is written', async () => {
    using dir = tempDir()
    const path = join(dir.path, 'g.sqlite')
    const database = openSqlite(path)
    const sqlite = new SqliteConversationStore(database.db)
    // A process folded batches 1 and 2 of its journal, and died before it emptied it.
    const id = '999999-cafe0001'
    const [p1, p2, p3] = [turn('p1', null), turn('p2', 'p1'), turn('p3', null)].map((record) => encodedRecord(record)!)
    await sqlite.fold(id, () => ({ records: [p1!, p2!], seq: 2 }))
    // Since then, the second turn was deleted: replaying the journal from zero would bring it back.
    expect(await sqlite.delete(k1('p2'))).toBe(true)
    const line = (seq: number, record: EncodedRecord) =>
      `[${seq},[${JSON.stringify([record.keyId, record.id, record.kind, record.upstream, record.parentId, record.createdAt, record.expiresAt]).slice(0, -1)},${record.request},${record.answer}]]]\n`
    writeFileSync(`${path}.conversations-${id}.log`, line(1, p1!) + line(2, p2!) + line(3, p3!))

    const b = await open(path)
    expect(await b.store.head(k1('p2'), T0)).toBeNull()
    expect(await b.store.head(k1('p1'), T0)).toMatchObject({ continuedBy: 'p2' })
    expect(await b.store.get(k1('p3'), T0)).toMatchObject({ answer: turn('p3', null).answer })
    expect(existsSync(`${path}.conversations-${id}.log`)).toBe(false)
    await b.store.stop()
    expect(database.sqlite.query('SELECT journal FROM usage_journals').all()).toEqual([])
    b.close()
    database.close()
  })

  test('under load a fold does not wait for the second: once FOLD_AT_RECORDS records wait, they are folded in the next turn', async () => {
    // Regression: a second's records folded at once (thousands, about 10 µs each) held every request for tens of ms.
    using dir = tempDir()
    const a = await countFolding(dir.path)
    const ids = recordIds('r')
    await Promise.all(ids.slice(0, -1).map((id) => a.store.put(turn(id, null))))
    // One short of the count: a turn later, nothing is folded.
    await twoTurns()
    expect(a.rows()).toEqual([])
    await a.store.put(turn(ids.at(-1)!, null))
    await waitFor(() => a.rows().length === FOLD_AT_RECORDS, 'the records folded once the count was reached')
    expect(a.rows()).toEqual(ids)
    expect(a.failures).toEqual([])
    await a.store.stop()
    a.close()
  })

  test('big records fold sooner: once their bytes reach FOLD_AT_BYTES, however few they are, they are folded in the next turn', async () => {
    // Regression: 128 records of 50 KiB (tool outputs holding files) made one fold that held the event loop for about 28 ms.
    using dir = tempDir()
    const a = await countFolding(dir.path)
    const big = (id: string) => turn(id, null, { request: { messages: [{ role: 'user', content: 'x'.repeat(FOLD_AT_BYTES / 4) }] } })
    for (const id of ['b1', 'b2', 'b3']) await a.store.put(big(id))
    // Three quarters of the bound: a turn later, nothing is folded.
    await twoTurns()
    expect(a.rows()).toEqual([])
    await a.store.put(big('b4'))
    await waitFor(() => a.rows().length === 4, 'the records folded once their bytes reached the bound')
    expect(a.rows()).toEqual(['b1', 'b2', 'b3', 'b4'])
    // The fold took their bytes with them: a small record after it waits for the count or the clock.
    await a.store.put(turn('s1', null))
    await twoTurns()
    expect(a.rows()).toHaveLength(4)
    expect(a.failures).toEqual([])
    await a.store.stop()
    a.close()
  })

  test('a fold that failed is not retried by the count every turn: the next fold made otherwise (a read, the timer) writes them', async () => {
    using dir = tempDir()
    const a = await countFolding(dir.path)
    // The database refuses the fold (as a locked or full one would).
    const fold = a.sqlite.fold.bind(a.sqlite)
    let attempts = 0
    a.sqlite.fold = async () => {
      attempts++
      throw new Error('database is locked')
    }
    const ids = recordIds('f')
    await Promise.all(ids.map((id) => a.store.put(turn(id, null))))
    await waitFor(() => a.failures.length === 1, 'the fold the count started, failed')
    // More puts in later turns, the count still past the bound: no fold is tried for them.
    for (const id of ['g1', 'g2', 'g3']) {
      await a.store.put(turn(id, null))
      await twoTurns()
    }
    expect(attempts).toBe(1)
    expect(a.rows()).toEqual([])
    // The next fold that works (here the one a delete makes first) writes everything, and the count starts folds again.
    a.sqlite.fold = fold
    expect(await a.store.delete(k1('g3'))).toBe(true)
    expect(a.rows()).toHaveLength(FOLD_AT_RECORDS + 2)
    await Promise.all(ids.map((id) => a.store.put(turn(`h${id}`, null))))
    await waitFor(() => a.rows().length === 2 * FOLD_AT_RECORDS + 2, 'a fold started by the count again')
    expect(a.failures).toHaveLength(1)
    await a.store.stop()
    a.close()
  })
})

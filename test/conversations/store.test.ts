import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { MAX_CHAIN_TURNS, MAX_RECORD_BYTES } from '../../src/conversations/store'
import { openSqliteStores } from '../../src/storage/sqlite'
import { SqliteConversationStore } from '../../src/storage/sqlite/conversations'
import { openSqlite } from '../../src/storage/sqlite/open'
import type { Stores } from '../../src/storage/types'
import { setupEach, teardownEach, TEST_MS } from '../support/hooks'
import { storeScenario, T0, turn } from './store-scenario'

setDefaultTimeout(TEST_MS)

describe('the conversation store on SQLite', () => {
  let stores: Stores
  setupEach(() => {
    stores = openSqliteStores(':memory:')
  })
  teardownEach(() => stores.close())

  test('put, get, head, chain, claim, release, delete and prune, each for its own key only', async () => {
    await storeScenario(stores.conversations)
  })

  test('a history past its bounds is not found: too many turns, or too many bytes', async () => {
    const store = stores.conversations
    for (let i = 0; i <= MAX_CHAIN_TURNS; i++) await store.put(turn(`t${i}`, i === 0 ? null : `t${i - 1}`))
    expect((await store.chain({ keyId: 'k1', id: `t${MAX_CHAIN_TURNS - 1}` }, T0))?.length).toBe(MAX_CHAIN_TURNS)
    expect(await store.chain({ keyId: 'k1', id: `t${MAX_CHAIN_TURNS}` }, T0)).toBeNull()

    // Three records of 12 MiB each: every one fits, the three together pass the 32 MiB a history may hold.
    const big = 'y'.repeat(12 * 1024 * 1024)
    expect(big.length).toBeLessThan(MAX_RECORD_BYTES)
    for (const [id, parent] of [
      ['b1', null],
      ['b2', 'b1'],
      ['b3', 'b2'],
    ] as const)
      expect(await store.put(turn(id, parent, { request: { messages: big } }))).toBe(true)
    expect((await store.chain({ keyId: 'k1', id: 'b2' }, T0))?.length).toBe(2)
    expect(await store.chain({ keyId: 'k1', id: 'b3' }, T0)).toBeNull()
  })

  test('a record is measured in UTF-8 bytes', async () => {
    await stores.conversations.put(turn('u', null, { request: 'é', answer: '€' }))
    // "é" and "€" as JSON strings: 2 + 2 and 3 + 2 bytes.
    expect((await stores.conversations.head({ keyId: 'k1', id: 'u' }, T0))?.size).toBe(9)
  })

  test('a put walks up the history only as far as a turn that expires before the new one', async () => {
    const database = openSqlite(':memory:')
    const store = new SqliteConversationStore(database.db)
    const expiry = (id: string) => database.sqlite.query<{ e: number }, [string]>('SELECT expires_at AS e FROM conversations WHERE id = ?').get(id)?.e
    await store.put(turn('y1', null))
    await store.put(turn('y2', 'y1', { expiresAt: T0 + 9000 }))
    expect(expiry('y1')).toBe(T0 + 9000)
    // Made to break the rule on purpose, to see where the next walk stops: at y2, which lives long enough.
    database.sqlite.run('UPDATE conversations SET expires_at = ? WHERE id = ?', [T0 + 2000, 'y1'])
    await store.put(turn('y3', 'y2', { expiresAt: T0 + 5000 }))
    expect([expiry('y1'), expiry('y2')]).toEqual([T0 + 2000, T0 + 9000])
    await store.put(turn('y4', 'y3', { expiresAt: T0 + 12_000 }))
    expect([expiry('y1'), expiry('y2'), expiry('y3')]).toEqual([T0 + 12_000, T0 + 12_000, T0 + 12_000])
    database.close()
  })
})

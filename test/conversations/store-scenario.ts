/**
 * One run through every operation of a ConversationStore, checked as it goes and returning what it
 * saw: test/conversations/store.test.ts runs it on SQLite, test/storage-parity.test.ts on SQLite
 * and Postgres and compares the two transcripts.
 */
import { expect } from 'bun:test'
import { Conversations } from '../../src/conversations/conversations'
import { type ConversationRecord, type ConversationStore, MAX_RECORD_BYTES, PRUNE_BATCH } from '../../src/conversations/store'

export const T0 = 1_800_000_000_000

/** A thread turn of key `k1` by default, alive for a second after T0. */
export const turn = (id: string, parentId: string | null, over: Partial<ConversationRecord> = {}): ConversationRecord => ({
  id,
  keyId: 'k1',
  kind: 'thread',
  upstream: null,
  parentId,
  request: { messages: [{ role: 'user', content: `question ${id}` }] },
  answer: { role: 'assistant', content: [{ type: 'text', text: `answer ${id} — ünïcode` }] },
  createdAt: T0,
  expiresAt: T0 + 1000,
  ...over,
})

const k1 = (id: string) => ({ keyId: 'k1', id })

export async function storeScenario(store: ConversationStore): Promise<unknown[]> {
  const seen: unknown[] = []
  const note = <T>(value: T): T => (seen.push(value), value)

  // A thread of three turns: stored, found only by its own key, chained root first.
  for (const [id, parent] of [
    ['a', null],
    ['b', 'a'],
    ['c', 'b'],
  ] as const)
    expect(await store.put(turn(id, parent))).toBe(true)
  expect(note(await store.get(k1('b'), T0))).toMatchObject({ id: 'b', parentId: 'a', kind: 'thread', answer: turn('b', 'a').answer })
  expect(await store.get({ keyId: 'k2', id: 'b' }, T0)).toBeNull()
  expect(await store.head({ keyId: 'k2', id: 'b' }, T0)).toBeNull()
  const headA = note(await store.head(k1('a'), T0))
  expect(headA?.continuedBy).toBe('b')
  expect(headA?.size).toBeGreaterThan(50)
  expect(note((await store.chain(k1('c'), T0))?.map((r) => r.id))).toEqual(['a', 'b', 'c'])
  expect(await store.chain({ keyId: 'k2', id: 'c' }, T0)).toBeNull()

  // A later turn keeps every turn before it alive as long as itself; expiry hides at once.
  await store.put(turn('d', 'c', { createdAt: T0 + 500, expiresAt: T0 + 5000 }))
  expect(note(await store.head(k1('a'), T0 + 4000))?.expiresAt).toBe(T0 + 5000)
  expect(await store.get(k1('d'), T0 + 5000)).toBeNull()
  expect(await store.chain(k1('d'), T0 + 5000)).toBeNull()

  // Claims: one continue at a time, a claim that ran out can be taken, a release names its own claim.
  await store.put(turn('e', null))
  const claims = [await store.claim(k1('e'), T0, T0 + 100), await store.claim(k1('e'), T0 + 1, T0 + 101), await store.claim(k1('e'), T0 + 100, T0 + 200)]
  await store.release(k1('e'), T0 + 100)
  claims.push(await store.claim(k1('e'), T0 + 150, T0 + 250))
  await store.release(k1('e'), T0 + 200)
  claims.push(await store.claim(k1('e'), T0 + 150, T0 + 300))
  await store.put(turn('f', 'e'))
  claims.push(await store.claim(k1('e'), T0 + 160, T0 + 400), await store.claim(k1('nothing'), T0, T0 + 1))
  await store.put(turn('native', null, { upstream: 'anthropic', request: null, answer: null }))
  claims.push(await store.claim(k1('native'), T0, T0 + 1), await store.claim({ keyId: 'k2', id: 'f' }, T0, T0 + 1))
  expect(note(claims)).toEqual(['claimed', 'in_flight', 'claimed', 'in_flight', 'claimed', 'continued', 'missing', 'missing', 'missing'])
  expect(await store.head(k1('native'), T0)).toMatchObject({ upstream: 'anthropic' })

  // The same id written again replaces the record, and its bookkeeping starts over.
  await store.put(turn('e', null, { answer: { role: 'assistant', content: [{ type: 'text', text: 'rewritten' }] } }))
  expect(note(await store.get(k1('e'), T0))).toMatchObject({ continuedBy: null, answer: { content: [{ text: 'rewritten' }] } })

  // Too large to keep: refused, nothing written.
  expect(note(await store.put(turn('huge', null, { request: 'x'.repeat(MAX_RECORD_BYTES) })))).toBe(false)
  expect(await store.head(k1('huge'), T0)).toBeNull()

  // Deleting a turn in the middle breaks the history after it; only the owner deletes.
  expect(note([await store.delete({ keyId: 'k2', id: 'b' }), await store.delete(k1('b')), await store.delete(k1('b'))])).toEqual([false, true, false])
  expect(await store.chain(k1('c'), T0)).toBeNull()

  // Pruning: expired records go, a batch at a time; live ones stay.
  const now = { at: T0 + 10_000 }
  const live = turn('live', null, { expiresAt: T0 + 20_000 })
  await store.put(live)
  for (let i = 0; i < PRUNE_BATCH + 50; i++) await store.put(turn(`old-${i}`, null, { keyId: `k${i % 7}` }))
  const removed = await new Conversations(store, { ttlMs: () => 1000, now: () => now.at }).pruneExpired()
  expect(note(removed)).toBe(PRUNE_BATCH + 50 + 6)
  expect(await store.head(k1('live'), now.at)).not.toBeNull()
  expect(await store.pruneExpired(now.at)).toBe(0)
  return seen
}

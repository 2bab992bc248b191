/**
 * Cache keys remembered by the text of the request: a repeat sent as the same text gets the key it
 * got before, and the memory never changes what a key is (the same keys as a fresh instance's, the
 * owners kept apart, other spellings of one request on one key).
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { CacheKeys } from '../../src/cache/key'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const alice = { keyId: 'key_alice', tier: 'team' }
const bob = { keyId: 'key_bob', tier: 'team' }
const text = '{"model":"local/chat","messages":[{"role":"user","content":"Hi"}],"temperature":0}'
const keyOf = (keys: CacheKeys, body: string, scope: 'key' | 'tier' | 'alias' = 'key', owner = alice) =>
  keys.keyOf('chat', 'local/chat', scope, owner, JSON.parse(body) as object, body)

describe('cache keys remembered by the request text', () => {
  test('a repeated text gets the key a fresh instance makes for it', () => {
    const keys = new CacheKeys()
    const first = keyOf(keys, text)
    expect(keyOf(keys, text)).toBe(first)
    expect(keyOf(new CacheKeys(), text)).toBe(first)
    expect(first).toMatch(/^[0-9a-f]{64}$/)
  })

  test('another spelling of the same request (order, spacing, ignored members) is the same key, remembered or not', () => {
    const keys = new CacheKeys()
    const first = keyOf(keys, text)
    const respelled = '{ "temperature": 0, "messages": [{"content": "Hi", "role": "user"}], "model": "local/chat", "stream": true, "user": "u1" }'
    expect(keyOf(keys, respelled)).toBe(first)
    expect(keyOf(keys, respelled)).toBe(first)
    expect(keys.keyOf('chat', 'local/chat', 'key', alice, JSON.parse(respelled) as object, undefined)).toBe(first)
  })

  test('the same text from another key (scope "key") or another alias or API never gets the first one\'s key', () => {
    const keys = new CacheKeys()
    const first = keyOf(keys, text)
    expect(keyOf(keys, text, 'key', bob)).not.toBe(first)
    expect(keyOf(keys, text, 'tier', bob)).toBe(keyOf(keys, text, 'tier', alice))
    expect(keys.keyOf('messages', 'local/chat', 'key', alice, JSON.parse(text) as object, text)).not.toBe(first)
    expect(keys.keyOf('chat', 'local/other', 'key', alice, JSON.parse(text) as object, text)).not.toBe(first)
  })

  test('a different request is a different key, however many texts came before (the memory starts over when full)', () => {
    const keys = new CacheKeys()
    const big = (i: number) => JSON.stringify({ model: 'local/chat', messages: [{ role: 'user', content: `${i} ${'x'.repeat(600_000)}` }] })
    const made = Array.from({ length: 9 }, (_, i) => keyOf(keys, big(i)))
    expect(new Set(made).size).toBe(9)
    for (let i = 0; i < 9; i++) expect(keyOf(keys, big(i))).toBe(made[i]!)
    expect(keyOf(keys, text)).toBe(keyOf(new CacheKeys(), text))
  })
})

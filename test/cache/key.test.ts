/**
 * Cache keys remembered by the text of the request: a repeat sent as the same text gets the key it
 * got before, and the memory never changes what a key is (the same keys as a fresh instance's, the
 * owners kept apart, other spellings of one request on one key); and a request the gateway changed
 * (a Responses request with item references resolved into it) is never remembered by its text.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { CacheKeys } from '../../src/cache/key'
import { responsesExchange, type ResponsesContext } from '../../src/serve/responses'
import { outlineJson } from '../../src/wire/json-text'
import type { ResponsesRequest } from '../../src/wire/openai-responses/types'
import { reasoningSealer } from '../../src/wire/pivot/sealed-reasoning'
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

  test('scope "tier" keys by the tier, scope "alias" by nobody: remembered keys follow the same owners', () => {
    const keys = new CacheKeys()
    const otherTier = { keyId: 'key_carol', tier: 'other' }
    expect(keyOf(keys, text, 'tier', alice)).not.toBe(keyOf(keys, text, 'tier', otherTier))
    expect(keyOf(keys, text, 'alias', alice)).toBe(keyOf(keys, text, 'alias', otherTier))
    expect(keyOf(keys, text, 'alias', otherTier)).toBe(keyOf(new CacheKeys(), text, 'alias', bob))
  })

  // The memory is probed with a request that is not its text's: a remembered text answers with the key of what it was first.
  const probe = (keys: CacheKeys, body: string, owner = alice) => keys.keyOf('chat', 'local/chat', 'key', owner, { model: 'local/chat', probe: body }, body)
  const other = (i: number) => JSON.stringify({ model: 'local/chat', messages: [{ role: 'user', content: `${i} ${'y'.repeat(60)}` }] })

  test('a text seen before gets its key from memory; a text longer than the bound is never remembered', () => {
    const keys = new CacheKeys(1000)
    const first = keyOf(keys, text)
    expect(probe(keys, text)).toBe(first)
    const long = JSON.stringify({ model: 'local/chat', messages: [{ role: 'user', content: 'x'.repeat(1000) }] })
    const made = keyOf(keys, long)
    expect(probe(keys, long)).not.toBe(made)
    expect(probe(keys, text)).toBe(first)
  })

  test("bounded: past its characters (each text and its key) the memory starts over, every owner's, and keys stay right", () => {
    // 400 characters: Bob's text (146 with its key) and one other (190), not a second other.
    const keys = new CacheKeys(400)
    const bobs = keyOf(keys, text, 'key', bob)
    const first = keyOf(keys, other(0))
    const second = keyOf(keys, other(1))
    expect([first, second]).toEqual([keyOf(new CacheKeys(), other(0)), keyOf(new CacheKeys(), other(1))])
    expect(probe(keys, other(1))).toBe(second)
    expect(probe(keys, other(0))).not.toBe(first)
    expect(probe(keys, text, bob)).not.toBe(bobs)
  })
})

describe('a request the gateway changed is keyed by what it became, never by its text', () => {
  const sent = '{"model":"local/chat","input":[{"type":"item_reference","id":"msg_1"},{"role":"user","content":"again"}]}'
  const body = { text: sent, value: JSON.parse(sent) as unknown, outline: outlineJson(sent, 64) }
  const context = (inputReplaced: boolean): ResponsesContext => ({
    keyId: 'key_alice',
    inputReplaced,
    sealer: reasoningSealer('a-secret-for-the-sealer-of-this-test'),
    // Not reached: the exchange is only made, no target is asked and nothing is kept.
    store: undefined as never,
    previous: null,
    now: () => 0,
    onRecordError: () => {},
  })
  const exchange = (inputReplaced: boolean) => responsesExchange(body.value as ResponsesRequest, body, context(inputReplaced))

  test('regression: item references resolved into a Responses request: its cache side gives no text to remember it by', () => {
    expect(exchange(true).cache?.text).toBeUndefined()
    expect(exchange(false).cache?.text).toBe(sent)
  })

  test('without a text, the key is made from the request itself every time: the same text resolved otherwise is another key', () => {
    const keys = new CacheKeys()
    const resolved = {
      model: 'local/chat',
      input: [
        { role: 'assistant', content: 'a secret' },
        { role: 'user', content: 'again' },
      ],
    }
    const unresolved = JSON.parse(sent) as object
    const first = keys.keyOf('responses', 'local/chat', 'tier', alice, resolved, exchange(true).cache?.text)
    expect(keys.keyOf('responses', 'local/chat', 'tier', bob, unresolved, exchange(false).cache?.text)).not.toBe(first)
  })
})

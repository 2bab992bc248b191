import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { parseGatewayConfig } from '../../src/config/load'
import { GatewayError } from '../../src/errors'
import { providerKinds } from '../../src/providers'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const base = {
  tiers: { t: { requests_per_minute: 1, tokens_per_minute: 1, max_concurrent: 1 } },
  upstreams: { local: { kind: 'mock' } },
}
const withCache = (cache: unknown, top: Record<string, unknown> = {}) => ({
  ...base,
  ...top,
  aliases: { 'a/b': { targets: [{ upstream: 'local', model: 'echo' }], cache } },
})
const parse = (raw: unknown) => parseGatewayConfig(raw, 'test.toml', providerKinds)

const messageOf = (raw: unknown): string => {
  try {
    parse(raw)
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError)
    return (error as Error).message
  }
  throw new Error('expected an error')
}

describe('cache settings', () => {
  test('off unless an alias sets it; scope key, no tool calls and the bounds by default', () => {
    const off = parse({ ...base, aliases: { 'a/b': { targets: [{ upstream: 'local', model: 'echo' }] } } })
    expect(off.cache.aliases.size).toBe(0)
    const on = parse(withCache({ ttl_s: 60 }))
    expect(on.cache.aliases.get('a/b')).toEqual({ ttlMs: 60_000, scope: 'key', toolCalls: false })
    expect(on.cache).toMatchObject({ maxEntries: 10_000, maxEntryBytes: 1024 * 1024 })
    const set = parse(withCache({ ttl_s: 5, scope: 'tier', tool_calls: true }, { cache: { max_entries: 7, max_entry_bytes: 900 } }))
    expect(set.cache.aliases.get('a/b')).toEqual({ ttlMs: 5_000, scope: 'tier', toolCalls: true })
    expect(set.cache).toMatchObject({ maxEntries: 7, maxEntryBytes: 900 })
  })

  test('a bad setting is refused at start, naming its field', () => {
    const cases: [unknown, string][] = [
      [withCache({ ttl_s: 0 }), 'aliases."a/b".cache.ttl_s'],
      [withCache({ scope: 'key' }), 'aliases."a/b".cache'],
      [withCache({ ttl_s: 10, scope: 'everyone' }), 'aliases."a/b".cache.scope'],
      [withCache({ ttl_s: 10, tool_calls: 'yes' }), 'aliases."a/b".cache.tool_calls'],
      [withCache({ ttl_s: 10, ttl: 5 }), 'aliases."a/b".cache.ttl: unknown field'],
      [withCache({ ttl_s: 10 }, { cache: { max_entries: 0 } }), 'cache.max_entries'],
      [withCache({ ttl_s: 10 }, { cache: { max_entry_bytes: -1 } }), 'cache.max_entry_bytes'],
      [withCache({ ttl_s: 10 }, { cache: { entries: 5 } }), 'cache.entries: unknown field'],
    ]
    for (const [raw, field] of cases) expect(messageOf(raw)).toContain(field)
  })
})

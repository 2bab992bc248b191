import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readEnv } from '../src/config/env'
import { loadGatewayConfig as loadWithKinds, parseGatewayConfig as parseWithKinds } from '../src/config/load'
import { providerKinds } from '../src/providers'

const loadGatewayConfig = (path: string | null) => loadWithKinds(path, providerKinds)
const parseGatewayConfig = (raw: unknown, source: string) => parseWithKinds(raw, source, providerKinds)
import { GatewayError } from '../src/errors'
import { tempDir, writeConfig } from './support/gateway'
import { TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const messageOf = (fn: () => unknown): string => {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError)
    return (error as Error).message
  }
  throw new Error('expected an error')
}

const base = {
  tiers: { t: { requests_per_minute: 1, tokens_per_minute: 1, max_concurrent: 1 } },
  upstreams: { up: { kind: 'openai', base_url: 'http://127.0.0.1:1/v1' }, local: { kind: 'mock' } },
  aliases: { 'a/b': { targets: [{ upstream: 'up', model: 'm' }] } },
}

describe('config file', () => {
  test('the built-in defaults parse, with every documented default filled in', () => {
    const config = loadGatewayConfig(null)
    expect(config.source).toBe('built-in defaults')
    expect(config.tiers.map((t) => t.name)).toEqual(['free', 'standard', 'pro'])
    expect(config.aliases.map((a) => a.name)).toContain('local/echo')
    const openai = config.upstreams.find((u) => u.name === 'openai')!
    expect(openai).toMatchObject({
      timeoutMs: 60_000,
      connectTimeoutMs: 10_000,
      maxRetries: 2,
      failureThreshold: 5,
      cooldownMs: 30_000,
      apiKeyEnv: 'OPENAI_API_KEY',
    })
    expect(config.routing.deadlineMs).toBe(120_000)
  })

  test('bad fields are rejected with a message naming the field', () => {
    const cases: [unknown, string][] = [
      [{ ...base, tiers: { t: { requests_per_minute: 0, tokens_per_minute: 1, max_concurrent: 1 } } }, 'tiers.t.requests_per_minute'],
      [{ ...base, tiers: { t: { requests_per_minut: 5, tokens_per_minute: 1, max_concurrent: 1 } } }, 'tiers.t'],
      [{ ...base, tierz: {} }, 'tierz: unknown field'],
      [{ ...base, upstreams: { up: { kind: 'cohere' } } }, 'upstreams.up.kind: unknown kind "cohere"'],
      [{ ...base, upstreams: { up: { kind: 'openai', timeout_ms: 'soon' } } }, 'upstreams.up.timeout_ms'],
      [{ ...base, upstreams: { up: { kind: 'openai', base_url: 'ftp://x' } } }, 'upstreams.up.base_url'],
      [{ ...base, aliases: { 'a/b': { targets: [{ upstream: 'nowhere', model: 'm' }] } } }, 'aliases."a/b".targets[0].upstream: no upstream named "nowhere"'],
      [{ ...base, aliases: { 'a/b': { targets: [{ upstream: 'local', model: 'gpt' }] } } }, 'aliases."a/b".targets[0].model'],
      [{ ...base, aliases: { 'a/b': { targets: [] } } }, 'aliases."a/b".targets'],
      [{ ...base, aliases: { 'a/b': { strategy: 'random', targets: [{ upstream: 'up', model: 'm' }] } } }, 'aliases."a/b".strategy'],
      [{ ...base, aliases: { noslash: { targets: [{ upstream: 'up', model: 'm' }] } } }, 'aliases."noslash"'],
      [{ ...base, aliases: { 'a/b': { targets: [{ upstream: 'up', model: 'm', wieght: 2 }] } } }, 'aliases."a/b".targets[0].wieght: unknown field'],
    ]
    for (const [raw, field] of cases) expect(messageOf(() => parseGatewayConfig(raw, 'test.toml'))).toContain(field)
  })

  test('TOML and JSON files load; syntax errors name the file', () => {
    using dir = tempDir()
    const toml = writeConfig(dir.path, '[tiers.x]\nrequests_per_minute = 5\ntokens_per_minute = 5\nmax_concurrent = 1\n')
    expect(loadGatewayConfig(toml).tiers[0]).toMatchObject({ name: 'x', requestsPerMinute: 5, models: null })
    const jsonFile = writeConfig(dir.path, JSON.stringify(base), 'gateway.json')
    expect(loadGatewayConfig(jsonFile).aliases[0]!.targets[0]).toEqual({ upstream: 'up', model: 'm', weight: 1, price: null })
    const broken = writeConfig(dir.path, '[tiers.x\n', 'broken.toml')
    expect(messageOf(() => loadGatewayConfig(broken))).toContain('broken.toml')
  })
})

describe('environment', () => {
  test('defaults', () => {
    const env = readEnv({})
    expect(env).toMatchObject({ port: 8080, host: '127.0.0.1', dbPath: './data/gateway.sqlite', headerBrand: 'svc', logLevel: 'info', maxBodyBytes: 1_048_576 })
    expect(env.adminKey).toBeNull()
  })

  test('bad values fail fast naming the variable', () => {
    expect(messageOf(() => readEnv({ PORT: 'eighty' }))).toContain('PORT')
    expect(messageOf(() => readEnv({ PORT: '70000' }))).toContain('PORT')
    expect(messageOf(() => readEnv({ LOG_LEVEL: 'loud' }))).toContain('LOG_LEVEL')
    expect(messageOf(() => readEnv({ GATEWAY_HEADER_BRAND: 'Bad Brand' }))).toContain('GATEWAY_HEADER_BRAND')
    expect(messageOf(() => readEnv({ GATEWAY_CONFIG: '/nonexistent/gateway.toml' }))).toContain('GATEWAY_CONFIG')
    expect(messageOf(() => readEnv({ GATEWAY_MAX_BODY_BYTES: '-1' }))).toContain('GATEWAY_MAX_BODY_BYTES')
  })

  test('several instances: nothing set keeps SQLite and memory; DATABASE_URL and REDIS_URL are checked, never echoed', () => {
    expect(readEnv({})).toMatchObject({ databaseUrl: null, redisUrl: null, redisTimeoutMs: 500, pgPoolSize: 10, pgListen: true })
    const both = readEnv({ DATABASE_URL: 'postgres://gw:secret@db:5432/chatgate', REDIS_URL: 'redis://:secret@cache:6379/0', GATEWAY_PG_LISTEN: '0' })
    expect(both).toMatchObject({ databaseUrl: 'postgres://gw:secret@db:5432/chatgate', redisUrl: 'redis://:secret@cache:6379/0', pgListen: false })
    // Redis without Postgres would split state between hosts: refused, naming REDIS_URL.
    expect(messageOf(() => readEnv({ REDIS_URL: 'redis://cache:6379' }))).toContain('REDIS_URL')
    const wrongScheme = messageOf(() => readEnv({ DATABASE_URL: 'mysql://gw:secret@db/chatgate' }))
    expect(wrongScheme).toContain('DATABASE_URL')
    expect(wrongScheme).not.toContain('secret')
    expect(messageOf(() => readEnv({ DATABASE_URL: 'not a url with secret' }))).not.toContain('secret')
    expect(messageOf(() => readEnv({ DATABASE_URL: 'postgres://db/x', REDIS_URL: 'http://cache' }))).toContain('REDIS_URL')
    expect(messageOf(() => readEnv({ GATEWAY_REDIS_TIMEOUT_MS: '0' }))).toContain('GATEWAY_REDIS_TIMEOUT_MS')
    expect(messageOf(() => readEnv({ GATEWAY_PG_LISTEN: 'yes' }))).toContain('GATEWAY_PG_LISTEN')
  })
})

import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { parseGatewayConfig } from '../../src/config/load'
import { GatewayError } from '../../src/errors'
import { providerKinds } from '../../src/providers'
import { inProcessGateway, tempDir, writeConfig } from '../support/gateway'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const base = {
  tiers: { t: { requests_per_minute: 1, tokens_per_minute: 1, max_concurrent: 1 } },
  upstreams: { up: { kind: 'openai', base_url: 'http://127.0.0.1:1/v1' }, other: { kind: 'openai', base_url: 'http://127.0.0.1:2/v1' } },
}
const parse = (aliases: unknown) => parseGatewayConfig({ ...base, aliases }, 'test.toml', providerKinds)

const messageOf = (fn: () => unknown): string => {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError)
    return (error as Error).message
  }
  throw new Error('expected an error')
}

describe('config: strategies and target limits', () => {
  test('the four strategies are taken; anything else is refused, naming the field and the choices', () => {
    for (const strategy of ['fallback', 'weighted', 'least_latency', 'least_busy'] as const) {
      expect(parse({ 'a/b': { strategy, targets: [{ upstream: 'up', model: 'm' }] } }).aliases[0]!.strategy).toBe(strategy)
    }
    const message = messageOf(() => parse({ 'a/b': { strategy: 'fastest', targets: [{ upstream: 'up', model: 'm' }] } }))
    expect(message).toContain('aliases."a/b".strategy')
    expect(message).toContain('"least_latency", "least_busy"')
  })

  test('rpm / tpm: positive integers, named when wrong; kept by position; absent when no target sets them', () => {
    expect(messageOf(() => parse({ 'a/b': { targets: [{ upstream: 'up', model: 'm', rpm: 0 }] } }))).toContain('aliases."a/b".targets[0].rpm')
    expect(messageOf(() => parse({ 'a/b': { targets: [{ upstream: 'up', model: 'm', tpm: 1.5 }] } }))).toContain('aliases."a/b".targets[0].tpm')
    const config = parse({
      'a/b': {
        targets: [
          { upstream: 'up', model: 'm' },
          { upstream: 'other', model: 'm', rpm: 30, tpm: 1000 },
        ],
      },
      'a/c': { targets: [{ upstream: 'up', model: 'm' }] },
    })
    expect(config.aliases[0]!.targetLimits).toEqual([
      { rpm: null, tpm: null },
      { rpm: 30, tpm: 1000 },
    ])
    expect(config.aliases[1]!.targetLimits).toBeUndefined()
  })

  test("one account's limits: two targets naming the same upstream and model with other values are refused, naming the second", () => {
    const message = messageOf(() =>
      parse({
        'a/b': { targets: [{ upstream: 'up', model: 'm', rpm: 30 }] },
        'a/c': { targets: [{ upstream: 'up', model: 'm', rpm: 60 }] },
      }),
    )
    expect(message).toContain('aliases."a/c".targets[0]')
    expect(message).toContain('aliases."a/b".targets[0]')
  })

  test('stored and read back: every alias naming the upstream and model gets its limits, whichever alias set them', async () => {
    using dir = tempDir()
    const path = writeConfig(
      dir.path,
      `[tiers.t]
requests_per_minute = 10
tokens_per_minute = 1000
max_concurrent = 1

[upstreams.up]
kind = "openai"
base_url = "http://127.0.0.1:1/v1"

[aliases."a/limited"]
strategy = "least_busy"
targets = [{ upstream = "up", model = "m", rpm = 30, tpm = 9000 }]

[aliases."a/plain"]
targets = [{ upstream = "up", model = "m" }, { upstream = "up", model = "n" }]
`,
    )
    const gw = await inProcessGateway({ env: { GATEWAY_CONFIG: path } })
    try {
      const { aliases } = gw.gateway.routing
      expect(aliases.get('a/limited')!.strategy).toBe('least_busy')
      expect(aliases.get('a/limited')!.targets[0]!.limits).toEqual({ rpm: 30, tpm: 9000 })
      expect(aliases.get('a/plain')!.targets[0]!.limits).toEqual({ rpm: 30, tpm: 9000 })
      expect(aliases.get('a/plain')!.targets[1]!.limits).toBeUndefined()
    } finally {
      await gw.close()
    }
  })
})

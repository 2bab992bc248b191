import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import OpenAI from 'openai'
import { loadGatewayConfig } from '../src/config/load'
import { createApp } from '../src/app'
import { readEnv } from '../src/config/env'
import { closeGateway, createGateway } from '../src/gateway'
import { createLogger } from '../src/log'
import { providerKinds } from '../src/providers'
import { estimateNanos, INPUT_OVERHEAD_TOKENS } from '../src/spend/estimate'
import { costNanos, formatUsd, parsePrice } from '../src/spend/price'
import { builtInPrices } from '../src/spend/price-table'
import { DEFAULT_CONFIG } from '../src/config/defaults'
import { inProcessGateway, type InProcessGateway, json, tempDir, writeConfig } from './support/gateway'
import { type FakeUpstream, fakeUpstream } from './support/upstream'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const fail = (field: string, message: string): never => {
  throw new Error(`${field}: ${message}`)
}

describe('cost arithmetic', () => {
  // USD per million: input 2.5, cached 1.25, cache write 3.125, output 10.
  const price = parsePrice({ input: 2.5, output: 10, cached_input: 1.25, cache_write: 3.125 }, 'p', fail)

  test('prices are exact integers of micro-dollars per million tokens; cache prices default to the input price', () => {
    expect(price).toEqual({ input: 2_500_000, output: 10_000_000, cachedInput: 1_250_000, cacheWrite: 3_125_000 })
    expect(parsePrice({ input: 0.075, output: 0.3 }, 'p', fail)).toEqual({ input: 75_000, output: 300_000, cachedInput: 75_000, cacheWrite: 75_000 })
    expect(() => parsePrice({ input: 0.0000001, output: 1 }, 'p', fail)).toThrow('p.input')
    expect(() => parsePrice({ input: -1, output: 1 }, 'p', fail)).toThrow('p.input')
  })

  test('cached reads, cache writes and reasoning tokens, each at its price, rounded half up per request', () => {
    // 1,001 prompt tokens: 500 cache reads, 201 cache writes, 300 uncached; 333 completion tokens
    // (reasoning included). In micro-dollars x tokens:
    //   300 x 2,500,000 + 500 x 1,250,000 + 201 x 3,125,000 + 333 x 10,000,000 = 5,333,125,000
    // / 1000 = 5,333,125 nano-dollars exactly.
    const tokens = { promptTokens: 1001, completionTokens: 333, cachedTokens: 500, cacheWriteTokens: 201 }
    expect(costNanos(tokens, price)).toBe(5_333_125)
    expect(formatUsd(5_333_125)).toBe('0.005333125')
    // Odd token counts at a price of 0.075/M: 7 tokens = 525,000 / 1000 = 525 nano exactly; 1 token
    // = 75 nano; 3 tokens of cached 0.0375/M = 112,500 / 1000 = 112.5 nano, rounded half up to 113.
    const cheap = parsePrice({ input: 0.075, output: 0.3, cached_input: 0.0375 }, 'p', fail)
    expect(costNanos({ promptTokens: 7, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0 }, cheap)).toBe(525)
    expect(costNanos({ promptTokens: 3, completionTokens: 0, cachedTokens: 3, cacheWriteTokens: 0 }, cheap)).toBe(113)
    expect(costNanos({ promptTokens: 1, completionTokens: 0, cachedTokens: 1, cacheWriteTokens: 0 }, cheap)).toBe(38)
    // Totals are sums of the rounded per-request figures: 113 + 38 = 151, not round(112.5 + 37.5) = 150.
    expect(formatUsd(113 + 38)).toBe('0.000000151')
  })

  test('the estimate bounds input by bytes plus the overhead, at the dearest price of the targets', () => {
    const other = parsePrice({ input: 1, output: 20 }, 'p', fail)
    // At price: 1,100 x 3,125,000 (the dearest input price) + 10 x 10,000,000; at other: 1,100 x 1,000,000 + 10 x 20,000,000.
    expect(estimateNanos({ inputTokens: 1100, outputTokens: 10 }, [price, other])).toBe(Math.ceil((1100 * 3_125_000 + 10 * 10_000_000) / 1000))
    expect(INPUT_OVERHEAD_TOKENS).toBeGreaterThan(0)
  })
})

describe('the price table', () => {
  test('loads, and prices every model of the default aliases but the mock', () => {
    const prices = builtInPrices()
    const models = Object.values(DEFAULT_CONFIG.aliases!).flatMap((alias) => alias.targets.filter((t) => t.upstream !== 'local').map((t) => t.model))
    expect(models.length).toBeGreaterThan(3)
    for (const model of models) expect(prices.has(model)).toBe(true)
    expect(prices.get('gpt-4o-mini')).toEqual({ input: 150_000, output: 600_000, cachedInput: 75_000, cacheWrite: 150_000 })
  })

  test('a bad row is refused naming the model and field; rows need a source and a date', () => {
    const row = { input: 1, output: 2, source: 'https://example.com/pricing', date: '2026-01-01' }
    expect(() => builtInPrices({ m: { ...row, output: -2 } })).toThrow('models."m".output')
    expect(() => builtInPrices({ m: { ...row, source: '' } })).toThrow('models."m".source')
    expect(() => builtInPrices({ m: { ...row, date: 'today' } })).toThrow('models."m".date')
  })

  test('the config adds or overrides prices per model and per target', () => {
    const config = loadGatewayConfig(
      writeConfig(
        tempDir().path,
        `
[prices."gpt-4o-mini"]
input = 0.2
output = 0.8

[upstreams.up]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"

[aliases."a/x"]
targets = [{ upstream = "up", model = "gpt-4o-mini" }, { upstream = "up", model = "m2", price = { input = 3, output = 4, cache_write = 5 } }]
`,
      ),
      providerKinds,
    )
    const [first, second] = config.aliases[0]!.targets
    expect(first!.price).toEqual({ input: 200_000, output: 800_000, cachedInput: 200_000, cacheWrite: 200_000 })
    expect(second!.price).toEqual({ input: 3_000_000, output: 4_000_000, cachedInput: 3_000_000, cacheWrite: 5_000_000 })
  })
})

/** A gateway whose mock alias costs $1 per million input tokens and $1,000 per million output tokens. */
function pricedMockConfig(dir: string, tier: string, extra = '') {
  return writeConfig(
    dir,
    `
[tiers.b]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000
${tier}

[upstreams.local]
kind = "mock"

[prices.echo]
input = 1
output = 1000

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
${extra}`,
  )
}

const ask = (gw: InProcessGateway, key: string, model = 'local/echo') =>
  gw.request('/v1/chat/completions', json({ model, max_tokens: 10, messages: [{ role: 'user', content: 'a b c' }] }, { authorization: `Bearer ${key}` }))

const spentToday = async (gw: InProcessGateway) => {
  const today = new Date(gw.gateway.now()).toISOString().slice(0, 10)
  return Math.round((await gw.gateway.reports.report({ from: today, to: today })).totals.cost_usd * 1e9)
}

describe('budgets', () => {
  // One request: 3 prompt + 3 completion words = 3 x 1,000,000 / 1000 + 3 x 1,000,000,000 / 1000 = 3,003,000 nano-dollars.
  const REQUEST_NANOS = 3_003_000

  test('100 concurrent requests, wave after wave, against a budget of about 10: spend never passes the budget by more than one request; every refusal is budget_exceeded with Retry-After; a restart grants nothing', async () => {
    using dir = tempDir()
    const env = { GATEWAY_CONFIG: pricedMockConfig(dir.path, 'daily_budget_usd = 0.03'), GATEWAY_DB: `${dir.path}/g.sqlite` }
    const gw = await inProcessGateway({ env })
    let served = 0
    let waves = 0
    try {
      // Waves of 100 at once until one is refused whole.
      for (;;) {
        waves++
        const responses = await Promise.all(Array.from({ length: 100 }, () => ask(gw, gw.key)))
        const ok = responses.filter((r) => r.status === 200)
        for (const refused of responses.filter((r) => r.status !== 200)) {
          expect(refused.status).toBe(429)
          expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
          expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('budget_exceeded')
        }
        for (const response of ok) expect(response.headers.get('x-svc-cost-usd')).toBe('0.003003')
        served += ok.length
        if (ok.length === 0) break
      }
      const spent = await spentToday(gw)
      expect(spent).toBe(served * REQUEST_NANOS)
      expect(spent).toBeLessThanOrEqual(30_000_000 + REQUEST_NANOS)
      // The budget was used, not refused early: the spend reached it.
      expect(spent).toBeGreaterThanOrEqual(30_000_000)
      expect(waves).toBeGreaterThan(2)
      console.log(`budget $0.03: ${served} requests served in ${waves} waves, spend ${spent} nano-dollars, over by ${spent - 30_000_000}`)
    } finally {
      await closeGateway(gw.gateway)
    }
    // A restart on the same database: the budget starts from the stored spend.
    const restarted = await createGateway({ env: readEnv({ LOG_LEVEL: 'error', ...env }), log: createLogger('error') })
    try {
      const app = await createApp(restarted)
      const response = await app.handle(
        new Request(
          'http://localhost/v1/chat/completions',
          json({ model: 'local/echo', messages: [{ role: 'user', content: 'a b c' }] }, { authorization: `Bearer ${gw.key}` }),
        ),
      )
      expect(response.status).toBe(429)
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('budget_exceeded')
    } finally {
      await closeGateway(restarted)
    }
  })

  test('a monthly budget rolls over on the 1st (injected clock); a key override beats the tier', async () => {
    using dir = tempDir()
    let now = Date.UTC(2026, 10, 30, 23, 0, 0)
    const gw = await inProcessGateway({ env: { GATEWAY_CONFIG: pricedMockConfig(dir.path, 'monthly_budget_usd = 1') }, now: () => now })
    try {
      const { key } = await gw.gateway.keys.create({ name: 'tight', tier: 'b', monthlyBudgetNanos: 6_000_000 })
      expect((await ask(gw, key)).status).toBe(200)
      expect((await ask(gw, key)).status).toBe(200)
      const refused = await ask(gw, key)
      expect(refused.status).toBe(429)
      // 23:00 on the 30th to 00:00 on December 1st: an hour.
      expect(refused.headers.get('retry-after')).toBe('3600')
      now = Date.UTC(2026, 11, 1, 0, 0, 0)
      expect((await ask(gw, key)).status).toBe(200)
    } finally {
      await closeGateway(gw.gateway)
    }
  })

  test('a budgeted key skips unpriced targets: 403 model_not_priced with none left, the priced fallback otherwise', async () => {
    using dir = tempDir()
    const extra = `
[upstreams.free]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"

[aliases."x/unpriced"]
targets = [{ upstream = "free", model = "no-such-priced-model" }]

[aliases."x/fallback"]
targets = [{ upstream = "free", model = "no-such-priced-model" }, { upstream = "local", model = "echo" }]
`
    const gw = await inProcessGateway({ env: { GATEWAY_CONFIG: pricedMockConfig(dir.path, 'daily_budget_usd = 5', extra) } })
    try {
      const refused = await ask(gw, gw.key, 'x/unpriced')
      expect(refused.status).toBe(403)
      expect(await refused.json()).toMatchObject({ error: { type: 'permission_error', code: 'model_not_priced', param: 'model' } })
      const served = await ask(gw, gw.key, 'x/fallback')
      expect(served.status).toBe(200)
      expect(served.headers.get('x-svc-upstream')).toBe('local')
    } finally {
      await closeGateway(gw.gateway)
    }
  })
})

describe('end to end with the openai SDK', () => {
  let upstream: FakeUpstream
  let gw: InProcessGateway
  setup(async () => {
    upstream = fakeUpstream((request) => {
      const model = (JSON.parse(request.text) as { model: string }).model
      return Response.json({
        id: 'chatcmpl-cached',
        object: 'chat.completion',
        created: 1_700_000_000,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: {
          prompt_tokens: 1001,
          completion_tokens: 333,
          total_tokens: 1334,
          prompt_tokens_details: { cached_tokens: 500 },
          completion_tokens_details: { reasoning_tokens: 200 },
        },
      })
    })
    const dir = tempDir()
    gw = await inProcessGateway({
      env: {
        GATEWAY_CONFIG: writeConfig(
          dir.path,
          `
[tiers.t]
requests_per_minute = 1000
tokens_per_minute = 10000000
max_concurrent = 10

[upstreams.up]
kind = "openai"
base_url = "${upstream.url}"

[aliases."p/cached"]
targets = [{ upstream = "up", model = "gpt-4.1", price = { input = 2.5, output = 10, cached_input = 1.25 } }]
`,
        ),
      },
    })
  })
  teardown(async () => {
    await closeGateway(gw.gateway)
    upstream.stop()
  })

  test('x-svc-cost-usd matches /v1/usage cost_usd to the nano-dollar', async () => {
    const client = new OpenAI({ apiKey: gw.key, baseURL: `${gw.listen()}/v1` })
    const { data, response } = await client.chat.completions.create({ model: 'p/cached', messages: [{ role: 'user', content: 'hi' }] }).withResponse()
    expect(data.usage?.prompt_tokens_details?.cached_tokens).toBe(500)
    // 501 uncached x 2.5 + 500 cached x 1.25 + 333 x 10 (reasoning included), per million:
    // 1,252,500 + 625,000 + 3,330,000 = 5,207,500 nano-dollars.
    expect(response.headers.get('x-svc-cost-usd')).toBe('0.0052075')
    const usage = (await (await fetch(`${gw.listen()}/v1/usage`, { headers: { authorization: `Bearer ${gw.key}` } })).json()) as {
      totals: { cost_usd: number }
      data: { cost_usd: number }[]
    }
    expect(usage.totals.cost_usd).toBe(0.0052075)
    expect(formatUsd(Math.round(usage.totals.cost_usd * 1e9))).toBe(response.headers.get('x-svc-cost-usd')!)
    const metrics = await (await gw.request('/metrics')).text()
    expect(metrics).toContain('chatgate_cost_usd_total{alias="p/cached",upstream="up"} 0.0052075')
  })
})

/**
 * The Prometheus metrics of issue 29, on a real gateway process (tracing off): time to first token
 * and output tokens per second for streams and JSON, fields dropped for a target, spans dropped (none
 * here); and the cache's counters, which a response cache fills through the request record, on the
 * observer itself.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createLogger } from '../../src/log'
import { GatewayMetrics } from '../../src/observe/metrics'
import { RequestObserver } from '../../src/observe/observer'
import { beginRequest } from '../../src/observe/request-record'
import { CircuitBreakers } from '../../src/routing/circuit'
import type { RoutingTable } from '../../src/routing/table'
import { fakeAnthropic, type FakeAnthropic } from '../support/fakes/anthropic'
import { tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { fakeUpstream, type FakeUpstream, openaiCompletion } from '../support/upstream'
import { chatBody, metricValue } from './helpers'

setDefaultTimeout(TEST_MS)

const encoder = new TextEncoder()
const chunk = (model: string, delta: Record<string, unknown>, finish: string | null = null, usage: unknown = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-m', object: 'chat.completion.chunk', created: 1, model, choices: usage ? [] : [{ index: 0, delta, finish_reason: finish }], usage })}\n\n`

/** A stream whose first token comes at once and the rest a little later: generation takes measurable time. */
function pacedStream(model: string): Response {
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(encoder.encode(chunk(model, { role: 'assistant', content: 'One' })))
      // The stream's shape (its generation time), not a wait of the test.
      await Bun.sleep(30)
      controller.enqueue(encoder.encode(chunk(model, { content: ' two three' }) + chunk(model, {}, 'stop')))
      controller.enqueue(encoder.encode(chunk(model, {}, null, { prompt_tokens: 4, completion_tokens: 6, total_tokens: 10 }) + 'data: [DONE]\n\n'))
      controller.close()
    },
  })
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
}

const dir = tempDir()
let gateway: GatewayProcess
let good: FakeUpstream
let claude: FakeAnthropic
let key: string

setup(async () => {
  good = fakeUpstream((request) => (request.body.stream ? pacedStream(String(request.body.model)) : openaiCompletion(String(request.body.model), 'Fine')))
  claude = fakeAnthropic()
  gateway = await spawnGateway(
    {
      GATEWAY_DB: `${dir.path}/gateway.sqlite`,
      GATEWAY_CONFIG: writeConfig(
        dir.path,
        `
[tiers.open]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000

[upstreams.good]
kind = "openai"
base_url = "${good.url}"

[upstreams.claude]
kind = "anthropic"
base_url = "${claude.url}"
api_key_env = "FAKE_ANTHROPIC_KEY"

[aliases."good/model"]
targets = [{ upstream = "good", model = "gpt-4o" }]

[aliases."claude/model"]
targets = [{ upstream = "claude", model = "claude-sonnet-4-5" }]
`,
      ),
      FAKE_ANTHROPIC_KEY: 'sk-ant-fake',
    },
    { expectFirstKey: true },
  )
  key = gateway.firstKey!
})

teardown(async () => {
  await gateway.stop()
  good.stop()
  claude.stop()
  dir[Symbol.dispose]()
})

const post = async (body: unknown) => {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  })
  return { response, text: await response.text() }
}
const scrape = async () => (await fetch(`${gateway.url}/metrics`)).text()
const labels = { alias: 'good/model', upstream: 'good' }

describe('on a gateway', () => {
  test('a stream: time to first token, and output tokens per second after it', async () => {
    const before = await scrape()
    const { response, text } = await post(chatBody('good/model', 'count', { stream: true }))
    expect(response.status).toBe(200)
    expect(text).toContain('[DONE]')
    const after = await scrape()
    const count = (text: string, name: string) => metricValue(text, `${name}_count`, labels) || 0
    expect(count(after, 'chatgate_ttft_seconds') - count(before, 'chatgate_ttft_seconds')).toBe(1)
    expect(count(after, 'chatgate_output_tokens_per_second') - count(before, 'chatgate_output_tokens_per_second')).toBe(1)
    // 6 tokens over the generation (after the first token): finite and positive.
    const sum =
      metricValue(after, 'chatgate_output_tokens_per_second_sum', labels) - (metricValue(before, 'chatgate_output_tokens_per_second_sum', labels) || 0)
    expect(sum).toBeGreaterThan(0)
    expect(Number.isFinite(sum)).toBe(true)
  })

  test('a JSON answer: output tokens per second over its attempt, and no time to first token', async () => {
    const before = await scrape()
    expect((await post(chatBody('good/model'))).response.status).toBe(200)
    const after = await scrape()
    const delta = (name: string) => (metricValue(after, name, labels) || 0) - (metricValue(before, name, labels) || 0)
    expect(delta('chatgate_output_tokens_per_second_count')).toBe(1)
    expect(delta('chatgate_ttft_seconds_count')).toBe(0)
  })

  test('fields a target does without are counted by name', async () => {
    const { response } = await post(chatBody('claude/model', 'hi', { seed: 7, max_tokens: 20 }))
    expect(response.status).toBe(200)
    expect(response.headers.get('x-svc-dropped')).toBe('seed')
    const metrics = await scrape()
    expect(metricValue(metrics, 'chatgate_dropped_fields_total', { field: 'seed' })).toBe(1)
    expect(metricValue(metrics, 'chatgate_otel_spans_dropped_total')).toBe(0)
  })
})

describe('the cache counters, from the request record', () => {
  test('each verdict is counted by alias, and what hits saved is added up', () => {
    const routing = { aliases: new Map() } as unknown as RoutingTable
    const metrics = new GatewayMetrics({ routing: () => routing, circuits: new CircuitBreakers(() => {}), now: Date.now })
    const observer = new RequestObserver(createLogger('error'), metrics, false)
    const finish = (cache: 'hit' | 'miss' | 'bypass', savedNanos?: number) => {
      const record = beginRequest(new Request('http://gateway/v1/chat/completions', { method: 'POST' }), crypto.randomUUID())
      Object.assign(record, { alias: 'cached/model', cache, cacheSavedNanos: savedNanos })
      observer.finish(record, 200)
    }
    finish('hit', 2_500_000)
    finish('hit', 500_000)
    finish('miss')
    finish('bypass')
    const text = metrics.text()
    expect(metricValue(text, 'chatgate_cache_requests_total', { alias: 'cached/model', result: 'hit' })).toBe(2)
    expect(metricValue(text, 'chatgate_cache_requests_total', { alias: 'cached/model', result: 'miss' })).toBe(1)
    expect(metricValue(text, 'chatgate_cache_requests_total', { alias: 'cached/model', result: 'bypass' })).toBe(1)
    expect(metricValue(text, 'chatgate_cache_saved_usd_total', { alias: 'cached/model' })).toBeCloseTo(0.003, 12)
  })
})

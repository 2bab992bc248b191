import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import OpenAI from 'openai'
import { tempDir, writeConfig } from './support/gateway'
import { type GatewayProcess, spawnGateway } from './support/process'
import { fakeUpstream, type FakeUpstream } from './support/upstream'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

/** An OpenAI embeddings answer as a real upstream writes it (https://platform.openai.com/docs/api-reference/embeddings/object). */
const answerFor = (model: string, inputs: number) =>
  JSON.stringify({
    object: 'list',
    data: Array.from({ length: inputs }, (_, index) => ({ object: 'embedding', index, embedding: [0.0023064255, -0.009327292, 0.015797347] })),
    model,
    usage: { prompt_tokens: 7 * inputs, total_tokens: 7 * inputs },
  })

describe('embeddings, with the official openai SDK', () => {
  const dir = tempDir()
  let upstream: FakeUpstream
  let gateway: GatewayProcess
  let client: OpenAI
  setup(async () => {
    upstream = fakeUpstream((request) => {
      const input = request.body.input
      const count = Array.isArray(input) && typeof input[0] !== 'number' ? input.length : 1
      return new Response(answerFor('text-embedding-3-small-2026', count), { headers: { 'content-type': 'application/json' } })
    })
    const config = writeConfig(
      dir.path,
      `
[tiers.t]
requests_per_minute = 1000
tokens_per_minute = 10000000
max_concurrent = 8
[upstreams.local]
kind = "mock"
[upstreams.oai]
kind = "openai"
base_url = "${upstream.url}"
[upstreams.claude]
kind = "anthropic"
base_url = "http://127.0.0.1:9/v1"
[aliases."local/embed"]
targets = [{ upstream = "local", model = "embed" }]
[aliases."openai/embed"]
targets = [{ upstream = "claude", model = "claude-x" }, { upstream = "oai", model = "text-embedding-3-small" }]
[aliases."claude/only"]
targets = [{ upstream = "claude", model = "claude-x" }]
`,
    )
    gateway = await spawnGateway({ GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: config }, { expectFirstKey: true })
    client = new OpenAI({ apiKey: gateway.firstKey!, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
  })
  teardown(async () => {
    await gateway.stop()
    upstream.stop()
    dir[Symbol.dispose]()
  })

  test('the mock: deterministic unit vectors, 8 dimensions by default, `dimensions` honoured, batches in order', async () => {
    const one = await client.embeddings.create({ model: 'local/embed', input: 'the same words' })
    const again = await client.embeddings.create({ model: 'local/embed', input: 'the same words' })
    const vector = one.data[0]!.embedding
    expect(vector).toHaveLength(8)
    expect(again.data[0]!.embedding).toEqual(vector)
    // Unit length, to float32 precision: the SDK fetches base64 (float32) and decodes it.
    expect(Math.hypot(...vector)).toBeCloseTo(1, 6)
    expect(one).toMatchObject({ object: 'list', model: 'local/embed', usage: { prompt_tokens: 3, total_tokens: 3 } })

    const batch = await client.embeddings.create({ model: 'local/embed', input: ['the same words', 'other words'], dimensions: 32 })
    expect(batch.data.map((d) => d.index)).toEqual([0, 1])
    expect(batch.data[0]!.embedding).toHaveLength(32)
    expect(batch.data[0]!.embedding.slice(0, 8)).not.toEqual(batch.data[1]!.embedding.slice(0, 8))
    // The SDK asks for base64 and decodes it: the floats survive the trip.
    const tokens = await client.embeddings.create({ model: 'local/embed', input: [1, 2, 3] })
    expect(tokens.data[0]!.embedding).toHaveLength(8)
    expect(tokens.usage.prompt_tokens).toBe(3)
  })

  test('OpenAI-compatible upstreams: the body as sent but the model, the answer as sent but the model; Anthropic targets skipped', async () => {
    const body = '{"model": "openai/embed", "input": ["alpha", "beta"], "encoding_format": "float", "dimensions": 3, "user": "u-1"}'
    const response = await fetch(`${gateway.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.firstKey}` },
      body,
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('x-svc-upstream')).toBe('oai')
    expect(upstream.requests.at(-1)!.text).toBe(body.replace('"openai/embed"', '"text-embedding-3-small"'))
    expect(upstream.requests.at(-1)!.path).toBe('/v1/embeddings')
    expect(await response.text()).toBe(answerFor('openai/embed', 2))

    const viaSdk = await client.embeddings.create({ model: 'openai/embed', input: 'gamma', encoding_format: 'float' })
    expect(viaSdk.data[0]!.embedding).toEqual([0.0023064255, -0.009327292, 0.015797347])
  })

  test('an alias with no target that embeds: 400 unsupported_parameter naming the model', async () => {
    const refused = await client.embeddings.create({ model: 'claude/only', input: 'x' }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError)
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ code: 'unsupported_parameter', param: 'model' })
  })

  test("usage: the input tokens are in the key's /v1/usage", async () => {
    const usage = (await (await fetch(`${gateway.url}/v1/usage`, { headers: { authorization: `Bearer ${gateway.firstKey}` } })).json()) as {
      data: { alias: string; upstream: string; requests: number; prompt_tokens: number; completion_tokens: number }[]
    }
    const row = (alias: string) => usage.data.find((r) => r.alias === alias)
    // local/embed counts words (token arrays: their length): 3, 3, 3 + 2, and 3 tokens.
    expect(row('local/embed')).toMatchObject({ requests: 4, completion_tokens: 0, prompt_tokens: 3 + 3 + (3 + 2) + 3 })
    expect(row('openai/embed')).toMatchObject({ upstream: 'oai', requests: 2, prompt_tokens: 14 + 7, completion_tokens: 0 })
  })
})

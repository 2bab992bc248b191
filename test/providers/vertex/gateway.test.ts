/**
 * `kind = "vertex"` on a real gateway process, against the fake Vertex AI and token endpoint of
 * test/support/fakes/vertex.ts (written from https://cloud.google.com/vertex-ai/docs/reference/rest,
 * https://ai.google.dev/api/generate-content and the service-account flow of
 * https://developers.google.com/identity/protocols/oauth2/service-account), with Claude answered by
 * the fake Anthropic API behind it: the config's checks at start, real tokens (an RS256 JWT checked
 * with the account's public key, a throwaway key pair made here), one token for a hundred concurrent
 * requests, a 401 refreshed and retried once, Gemini and Claude models through every inbound API,
 * embeddings through `:predict`.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { parseGatewayConfig } from '../../../src/config/load'
import { providerKinds } from '../../../src/providers'
import { ADMIN_KEY, createKey } from '../../support/cluster'
import { ANTHROPIC_MARKER, fakeAnthropic, type FakeAnthropic } from '../../support/fakes/anthropic'
import { GEMINI_MARKER } from '../../support/fakes/gemini'
import { fakeVertex, type FakeVertex, serviceAccountFile } from '../../support/fakes/vertex'
import { tempDir, writeConfig } from '../../support/gateway'
import { setup, teardown, TEST_MS } from '../../support/hooks'
import { type GatewayProcess, spawnGateway } from '../../support/process'
import { OPEN_TIER, sseEvents } from '../../responses/helpers'

setDefaultTimeout(TEST_MS)

type Json = Record<string, any>

const upstream = (url: string, variable: string, extra = '') => `
kind = "vertex"
project = "chatgate-test"
location = "us-central1"
credentials_file_env = "${variable}"
base_url = "${url}"
${extra}`

const config = (url: string) => `
${OPEN_TIER}
[upstreams.vtx]
${upstream(url, 'VERTEX_SA', 'max_retries = 0')}

[upstreams.stranger]
${upstream(url, 'STRANGER_SA', 'max_retries = 0')}

[aliases."vtx/gemini"]
targets = [{ upstream = "vtx", model = "gemini-2.5-pro" }]

[aliases."vtx/claude"]
targets = [{ upstream = "vtx", model = "claude-sonnet-4-5" }]

[aliases."vtx/embed"]
targets = [{ upstream = "vtx", model = "text-embedding-005" }]

[aliases."vtx/gembed"]
targets = [{ upstream = "vtx", model = "gemini-embedding-001" }]

[aliases."vtx/stranger"]
targets = [{ upstream = "stranger", model = "gemini-2.5-pro" }]
`

const dir = tempDir()
let gateway: GatewayProcess
let vertex: FakeVertex
let claude: FakeAnthropic
let key: string

setup(async () => {
  claude = fakeAnthropic({ name: 'vertex' })
  vertex = fakeVertex({ anthropic: { url: claude.url, apiKey: 'sk-ant-fake' }, tokenDelayMs: 200 })
  const account = serviceAccountFile(dir.path, vertex.tokenUri)
  const stranger = serviceAccountFile(dir.path, vertex.tokenUri, 'stranger.json')
  vertex.trust(account)
  gateway = await spawnGateway({
    GATEWAY_DB: `${dir.path}/gateway.sqlite`,
    GATEWAY_CONFIG: writeConfig(dir.path, config(vertex.url)),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    VERTEX_SA: account.path,
    STRANGER_SA: stranger.path,
  })
  key = (await createKey(gateway.url, { name: 'vertex', tier: 'open' })).key
})

teardown(async () => {
  await gateway.stop()
  vertex.stop()
  claude.stop()
  dir[Symbol.dispose]()
})

const post = (path: string, body: unknown) =>
  fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  })

async function ok(response: Response): Promise<Json> {
  const text = await response.text()
  expect({ status: response.status, text: response.status === 200 ? '' : text }).toEqual({ status: 200, text: '' })
  return JSON.parse(text)
}

const PREFIX = '/v1/projects/chatgate-test/locations/us-central1/publishers'

/** A Messages stream's content blocks, put together from its events as an Anthropic client does (200 expected). */
async function streamedContent(response: Response): Promise<Json[]> {
  const text = await response.text()
  expect({ status: response.status, text: response.status === 200 ? '' : text }).toEqual({ status: 200, text: '' })
  const blocks: Json[] = []
  const partial = new Map<number, string>()
  for (const { data } of sseEvents(text)) {
    if (data?.type === 'content_block_start') blocks[data.index] = { ...data.content_block }
    if (data?.type !== 'content_block_delta') continue
    const block = blocks[data.index]!
    const delta = data.delta
    if (delta.type === 'text_delta') block.text += delta.text
    else if (delta.type === 'thinking_delta') block.thinking += delta.thinking
    else if (delta.type === 'signature_delta') block.signature += delta.signature
    else if (delta.type === 'input_json_delta') partial.set(data.index, (partial.get(data.index) ?? '') + delta.partial_json)
  }
  for (const [index, json] of partial) blocks[index]!.input = JSON.parse(json)
  return blocks
}
const chat = (model: string, extra: Json = {}) => post('/v1/chat/completions', { model, messages: [{ role: 'user', content: 'hello vertex' }], ...extra })

describe('the config', () => {
  const parse = (fields: string, env: Record<string, string | undefined>) =>
    parseGatewayConfig(Bun.TOML.parse(`[upstreams.v]\n${fields}`), 'test.toml', providerKinds, undefined, env)
  const problem = (fields: string, env: Record<string, string | undefined> = {}) => {
    try {
      parse(fields, env)
      return null
    } catch (error) {
      return (error as Error).message
    }
  }

  test('vertex takes project, location and credentials_file_env, each checked at start naming it; gemini needs its key', () => {
    const good = serviceAccountFile(dir.path, 'https://oauth2.googleapis.com/token', 'good.json').path
    const notJson = `${dir.path}/not.json`
    writeFileSync(notJson, 'nope')
    const badKey = `${dir.path}/bad-key.json`
    writeFileSync(badKey, JSON.stringify({ client_email: 'a@b', token_uri: 'https://x', private_key: 'not a key' }))
    const vertexFields = (extra: string) => `kind = "vertex"\n${extra}`
    expect([
      problem(vertexFields('location = "us-central1"\ncredentials_file_env = "SA"'), { SA: good }),
      problem(vertexFields('project = "p"\ncredentials_file_env = "SA"'), { SA: good }),
      problem(vertexFields('project = "p"\nlocation = "us-central1"')),
      problem(vertexFields('project = "p"\nlocation = "us-central1"\ncredentials_file_env = "SA"')),
      problem(vertexFields('project = "p"\nlocation = "us-central1"\ncredentials_file_env = "SA"'), { SA: `${dir.path}/missing.json` }),
      problem(vertexFields('project = "p"\nlocation = "us-central1"\ncredentials_file_env = "SA"'), { SA: notJson }),
      problem(vertexFields('project = "p"\nlocation = "us-central1"\ncredentials_file_env = "SA"'), { SA: badKey }),
      problem(vertexFields('project = "p"\nlocation = "us-central1"\ncredentials_file_env = "SA"\nregion = "x"'), { SA: good }),
      problem(vertexFields('project = "p"\nlocation = "us-central1"\ncredentials_file_env = "SA"'), { SA: good }),
      problem('kind = "gemini"'),
      problem('kind = "gemini"\napi_key_env = "GEMINI_API_KEY"'),
      problem('kind = "gemini"\napi_key_env = "GEMINI_API_KEY"', { GEMINI_API_KEY: 'k' }),
      problem('kind = "gemini"\napi_key_env = "GEMINI_API_KEY"\nproject = "p"', { GEMINI_API_KEY: 'k' }),
    ]).toEqual([
      'Invalid config (test.toml): upstreams.v.project: required for kind "vertex"',
      'Invalid config (test.toml): upstreams.v.location: required for kind "vertex"',
      'Invalid config (test.toml): upstreams.v.credentials_file_env: required for kind "vertex"',
      'Invalid config (test.toml): upstreams.v.credentials_file_env: the environment variable SA is not set',
      `Invalid config (test.toml): upstreams.v.credentials_file_env: cannot read the service-account file ${dir.path}/missing.json: ENOENT`,
      `Invalid config (test.toml): upstreams.v.credentials_file_env: the service-account file ${notJson} is not JSON`,
      `Invalid config (test.toml): upstreams.v.credentials_file_env: the private_key of the service-account file ${badKey} is not a PEM private key`,
      'Invalid config (test.toml): upstreams.v.region: unknown field for kind "vertex"',
      null,
      'Invalid config (test.toml): upstreams.v.api_key_env: required for kind "gemini"',
      'Invalid config (test.toml): upstreams.v.api_key_env: the environment variable GEMINI_API_KEY is not set',
      null,
      'Invalid config (test.toml): upstreams.v.project: unknown field for kind "gemini"',
    ])
  })

  test('the config examples of docs/providers/gemini.md and vertex.md parse, their variables set', async () => {
    const account = serviceAccountFile(dir.path, 'https://oauth2.googleapis.com/token', 'docs.json').path
    const env = { GEMINI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k', GOOGLE_APPLICATION_CREDENTIALS: account }
    for (const page of ['gemini', 'vertex']) {
      const text = await Bun.file(`${import.meta.dir}/../../../docs/providers/${page}.md`).text()
      const blocks = [...text.matchAll(/```toml\n([\s\S]*?)```/g)].map((m) => m[1]!)
      expect(blocks.length).toBe(1)
      const config = parseGatewayConfig(Bun.TOML.parse(blocks[0]!), `${page}.md`, providerKinds, undefined, env)
      expect(config.aliases.length).toBeGreaterThan(0)
    }
  })

  test('a server whose service-account file is unreadable refuses to start, naming the field', async () => {
    const refused = await spawnGateway({
      GATEWAY_DB: `${dir.path}/refused.sqlite`,
      GATEWAY_CONFIG: writeConfig(dir.path, `[upstreams.v]\n${upstream('https://x.example/v1', 'SA')}`, 'refused.toml'),
      SA: `${dir.path}/nowhere.json`,
    }).then(
      (started) => started.stop().then(() => 'started'),
      (error: Error) => error.message,
    )
    expect(refused).toContain('upstreams.v.credentials_file_env: cannot read the service-account file')
  })
})

describe('access tokens', () => {
  test("100 concurrent requests make one token request; the JWT verifies with the account's public key", async () => {
    const before = vertex.tokenRequests
    const answers = await Promise.all(Array.from({ length: 100 }, () => chat('vtx/gemini')))
    expect(answers.map((r) => r.status)).toEqual(Array.from({ length: 100 }, () => 200))
    expect({ tokens: vertex.tokenRequests - before, refused: vertex.refusedAssertions }).toEqual({ tokens: before === 0 ? 1 : 0, refused: [] })
    const bearers = new Set(vertex.calls.filter((c) => c.path.startsWith(PREFIX)).map((c) => c.headers.get('authorization')))
    expect(bearers.size).toBe(1)
  })

  test('a 401 gets one new token and one more try, though max_retries is 0', async () => {
    await ok(await chat('vtx/gemini'))
    const before = vertex.tokenRequests
    vertex.revokeTokens()
    const retried = await chat('vtx/gemini')
    await ok(retried)
    expect({ tokens: vertex.tokenRequests - before, attempts: retried.headers.get('x-svc-attempts') }).toEqual({ tokens: 1, attempts: '1' })
  })

  test("a token endpoint that refuses the account is the gateway's 502", async () => {
    const refused = await chat('vtx/stranger')
    expect({ status: refused.status, code: ((await refused.json()) as Json).error.code }).toEqual({ status: 502, code: 'upstream_auth_failed' })
    expect(vertex.refusedAssertions.at(-1)).toBe('Invalid JWT Signature.')
  })
})

describe('Gemini models on Vertex AI', () => {
  test('chat, messages and responses, JSON and streamed, on publishers/google', async () => {
    const json = await ok(await chat('vtx/gemini'))
    expect(json.choices[0].message.content).toContain(GEMINI_MARKER)
    expect(vertex.calls.at(-1)!.path).toBe(`${PREFIX}/google/models/gemini-2.5-pro:generateContent`)
    const streamed = sseEvents(await (await chat('vtx/gemini', { stream: true })).text())
    expect(streamed.map((e) => e.data?.choices?.[0]?.delta?.content ?? '').join('')).toContain(GEMINI_MARKER)
    expect(vertex.calls.at(-1)!.path + vertex.calls.at(-1)!.search).toBe(`${PREFIX}/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse`)
    const message = await ok(await post('/v1/messages', { model: 'vtx/gemini', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }))
    expect(message.content.find((b: Json) => b.type === 'text').text).toContain(GEMINI_MARKER)
    const events = sseEvents(
      await (await post('/v1/messages', { model: 'vtx/gemini', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], stream: true })).text(),
    )
    expect(events.at(-1)!.data).toEqual({ type: 'message_stop' })
    const response = await ok(await post('/v1/responses', { model: 'vtx/gemini', input: 'hi' }))
    expect(response.status).toBe('completed')
    const safety = await ok(await post('/v1/responses', { model: 'vtx/gemini', input: '[[block:prompt]]' }))
    expect(safety.incomplete_details).toEqual({ reason: 'content_filter' })
  })

  test("count_tokens on Vertex AI's :countTokens (contents, not generateContentRequest)", async () => {
    const counted = await ok(await post('/v1/messages/count_tokens', { model: 'vtx/gemini', messages: [{ role: 'user', content: 'Count me.' }] }))
    const call = vertex.calls.at(-1)!
    expect({ path: call.path, body: call.body }).toEqual({
      path: `${PREFIX}/google/models/gemini-2.5-pro:countTokens`,
      body: { contents: [{ role: 'user', parts: [{ text: 'Count me.' }] }] },
    })
    expect(counted).toEqual({ input_tokens: vertex.model.promptTokens(call.body) })
  })

  test('embeddings through :predict: many instances a request, one for gemini-embedding-001; usage from the token counts', async () => {
    const many = await ok(await post('/v1/embeddings', { model: 'vtx/embed', input: ['one', 'three'], dimensions: 4 }))
    expect(vertex.calls.at(-1)!.body).toEqual({ instances: [{ content: 'one' }, { content: 'three' }], parameters: { outputDimensionality: 4 } })
    expect({ n: many.data.length, usage: many.usage }).toEqual({ n: 2, usage: { prompt_tokens: 1 + 2, total_tokens: 3 } })
    const before = vertex.calls.length
    const one = await ok(await post('/v1/embeddings', { model: 'vtx/gembed', input: ['one', 'three'] }))
    expect({ calls: vertex.calls.length - before, n: one.data.length, index: one.data.map((d: Json) => d.index) }).toEqual({ calls: 2, n: 2, index: [0, 1] })
  })
})

describe('Gemini-native callers on Vertex AI', () => {
  test("generateContent relayed as sent; a Gemini API countTokens body adapted to Vertex AI's", async () => {
    const native = (method: string, body: unknown) =>
      fetch(`${gateway.url}/v1beta/models/vtx/gemini:${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
        body: JSON.stringify(body),
      })
    const contents = [{ role: 'user', parts: [{ text: 'native vertex' }] }]
    const answer = await ok(await native('generateContent', { contents }))
    expect(answer.candidates[0].content.parts.at(-1).text).toContain(GEMINI_MARKER)
    expect(vertex.calls.at(-1)!.body).toEqual({ contents })
    await ok(await native('countTokens', { generateContentRequest: { model: 'models/vtx/gemini', contents } }))
    expect(vertex.calls.at(-1)!.body).toEqual({ contents })
  })
})

describe('Claude on Vertex AI', () => {
  test('chat, JSON and streamed, through rawPredict and streamRawPredict; count_tokens', async () => {
    const json = await ok(await chat('vtx/claude'))
    expect(json.choices[0].message.content).toContain(ANTHROPIC_MARKER)
    const call = vertex.calls.at(-1)!
    expect(call.path).toBe(`${PREFIX}/anthropic/models/claude-sonnet-4-5:rawPredict`)
    expect({ version: call.body.anthropic_version, model: call.body.model }).toEqual({ version: 'vertex-2023-10-16', model: undefined })
    const chunks = sseEvents(await (await chat('vtx/claude', { stream: true, stream_options: { include_usage: true } })).text())
    expect(chunks.map((e) => e.data?.choices?.[0]?.delta?.content ?? '').join('')).toContain(ANTHROPIC_MARKER)
    expect(vertex.calls.at(-1)!.path).toBe(`${PREFIX}/anthropic/models/claude-sonnet-4-5:streamRawPredict`)
    const counted = await ok(await post('/v1/messages/count_tokens', { model: 'vtx/claude', messages: [{ role: 'user', content: 'Count me.' }] }))
    expect(vertex.calls.at(-1)!.path).toBe(`${PREFIX}/anthropic/models/count-tokens:rawPredict`)
    expect(counted.input_tokens).toBeGreaterThan(0)
  })

  test("a Messages tool loop with thinking: Claude's signed thinking goes back in the rawPredict body unchanged, first in the turn", async () => {
    const tools = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }]
    const thinking = { type: 'enabled', budget_tokens: 1024 }
    const claudeCalls = () => vertex.calls.filter((c) => c.path.startsWith(`${PREFIX}/anthropic/models/claude-sonnet-4-5:`))
    // One turn JSON and the next streamed, then the other way round.
    for (const firstStreamed of [false, true]) {
      const question = `Weather? (${firstStreamed ? 'streamed first' : 'JSON first'})`
      const first = { model: 'vtx/claude', max_tokens: 2000, thinking, tools, messages: [{ role: 'user', content: question }] }
      const content: Json[] = firstStreamed
        ? await streamedContent(await post('/v1/messages', { ...first, stream: true }))
        : (await ok(await post('/v1/messages', first))).content
      expect(content.map((b) => b.type)).toEqual(['thinking', 'tool_use'])
      const [block, use] = content as [Json, Json]
      // Anthropic's own signature, as the fake Anthropic API behind Vertex AI issued it.
      expect(block.signature).toStartWith('fakesig_vertex_')
      const second = {
        ...first,
        messages: [
          ...first.messages,
          { role: 'assistant', content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] },
        ],
      }
      const final: Json[] = firstStreamed
        ? (await ok(await post('/v1/messages', second))).content
        : await streamedContent(await post('/v1/messages', { ...second, stream: true }))
      expect(final.find((b) => b.type === 'text')?.text).toContain('the tool said: sunny')
      const call = claudeCalls().at(-1)!
      expect(call.path).toEndWith(firstStreamed ? ':rawPredict' : ':streamRawPredict')
      expect(call.body.thinking).toEqual(thinking)
      const turn = call.body.messages[1]
      expect(turn.role).toBe('assistant')
      expect(turn.content[0]).toEqual({ type: 'thinking', thinking: block.thinking, signature: block.signature })
      expect(turn.content[1]).toEqual({ type: 'tool_use', id: use.id, name: 'get_weather', input: use.input })
    }
    // Without its thinking the turn is refused, as Claude on Vertex AI refuses it with thinking enabled.
    const first = await ok(
      await post('/v1/messages', { model: 'vtx/claude', max_tokens: 2000, thinking, tools, messages: [{ role: 'user', content: 'Weather?' }] }),
    )
    const use = first.content.find((b: Json) => b.type === 'tool_use')
    const refused = await post('/v1/messages', {
      model: 'vtx/claude',
      max_tokens: 2000,
      thinking,
      tools,
      messages: [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: [use] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] },
      ],
    })
    const body = (await refused.json()) as Json
    expect([refused.status, body.type, body.error?.type]).toEqual([400, 'error', 'invalid_request_error'])
    expect(body.error.message).toContain('Expected `thinking` or `redacted_thinking`, but found `tool_use`')
  })
})

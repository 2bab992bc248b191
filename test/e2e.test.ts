import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import OpenAI from 'openai'
import { tempDir, writeConfig } from './support/gateway'
import { type GatewayProcess, runCli, spawnGateway } from './support/process'
import { type FakeUpstream, fakeUpstream, openaiCompletion, openaiStream } from './support/upstream'
import { waitFor } from './support/wait'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

/** The real server process, a real upstream on a socket, and the official OpenAI client. */
describe('end to end through the real server', () => {
  const dir = tempDir()
  let upstream: FakeUpstream
  let gateway: GatewayProcess
  let client: OpenAI
  let env: Record<string, string>

  setup(async () => {
    upstream = fakeUpstream((req) => {
      const model = String(req.body.model)
      const last = (req.body.messages as { content: string }[]).at(-1)!.content
      if (req.body.stream)
        return openaiStream(
          model,
          last.split(' ').map((w, i) => (i === 0 ? w : ` ${w}`)),
        )
      return openaiCompletion(model, `upstream says: ${last}`)
    })
    const config = writeConfig(
      dir.path,
      `
[tiers.team]
requests_per_minute = 600
tokens_per_minute = 1000000
max_concurrent = 16

[upstreams.fake]
kind = "openai"
base_url = "${upstream.url}"
api_key_env = "FAKE_UPSTREAM_KEY"

[upstreams.local]
kind = "mock"

[aliases."acme/fast"]
targets = [{ upstream = "fake", model = "fake-model-1" }]

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
`,
    )
    env = { GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: config, FAKE_UPSTREAM_KEY: 'upstream-secret-123' }
    gateway = await spawnGateway(env, { expectFirstKey: true })
    expect(gateway.firstKey).toMatch(/^sk-cg-[A-Za-z0-9]{40}$/)
    client = new OpenAI({ apiKey: gateway.firstKey!, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
  })

  teardown(async () => {
    await gateway?.stop()
    upstream?.stop()
    dir[Symbol.dispose]()
  })

  test('chat.completions.create goes to the upstream with its model, our key and unknown fields kept', async () => {
    const completion = await client.chat.completions.create({
      model: 'acme/fast',
      messages: [{ role: 'user', content: 'ping' }],
      temperature: 0.2,
      // A field the gateway does not know must reach the upstream untouched.
      ...({ vendor_extension: { beam: 3 } } as object),
    })
    expect(completion.model).toBe('acme/fast')
    expect(completion.choices[0]!.message.content).toBe('upstream says: ping')
    expect(completion.usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 })
    const seen = upstream.requests.at(-1)!
    expect(seen.path).toBe('/v1/chat/completions')
    expect(seen.body.model).toBe('fake-model-1')
    expect(seen.body.temperature).toBe(0.2)
    expect(seen.body.vendor_extension).toEqual({ beam: 3 })
    expect(seen.headers.get('authorization')).toBe('Bearer upstream-secret-123')
  })

  test("the upstream gets the caller's JSON text as sent, only the model swapped", async () => {
    // As Python's json.dumps writes it: spaces after colons and commas, a nested "model" key.
    const sent = '{"model": "acme/fast", "messages": [{"role": "user", "content": "say \\"model\\": \\"acme/fast\\""}], "metadata": {"model": "other"}, "n": 1}'
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.firstKey}` },
      body: sent,
    })
    expect(response.status).toBe(200)
    expect(upstream.requests.at(-1)!.text).toBe(sent.replace('"model": "acme/fast"', '"model": "fake-model-1"'))
    // The answer is the upstream's text with its model swapped back to the alias.
    expect(await response.json()).toMatchObject({ model: 'acme/fast', object: 'chat.completion' })
  })

  test('streaming with for await yields the pieces in order, with the alias as model', async () => {
    const stream = await client.chat.completions.create({
      model: 'acme/fast',
      messages: [{ role: 'user', content: 'the quick brown fox' }],
      stream: true,
      stream_options: { include_usage: true },
    })
    let text = ''
    let usage: OpenAI.CompletionUsage | null | undefined
    for await (const chunk of stream) {
      expect(chunk.model).toBe('acme/fast')
      text += chunk.choices[0]?.delta?.content ?? ''
      if (chunk.usage) usage = chunk.usage
    }
    expect(text).toBe('the quick brown fox')
    expect(usage).toEqual({ prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 })
    const seen = upstream.requests.at(-1)!
    expect(seen.body.stream).toBe(true)
    expect(seen.body.stream_options).toEqual({ include_usage: true })
  })

  test('models.list and models.retrieve', async () => {
    const ids: string[] = []
    for await (const model of client.models.list()) ids.push(model.id)
    expect(ids.sort()).toEqual(['acme/fast', 'local/echo'])
    const model = await client.models.retrieve('local/echo')
    expect(model).toMatchObject({ id: 'local/echo', object: 'model', owned_by: 'local' })
  })

  test('the client sees gateway errors as typed API errors', async () => {
    const failure = (promise: Promise<unknown>) =>
      promise.then(
        () => null,
        (error: unknown) => error,
      )
    const unknown = await failure(client.chat.completions.create({ model: 'acme/none', messages: [{ role: 'user', content: 'x' }] }))
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError)
    expect((unknown as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found')
    const badKey = new OpenAI({ apiKey: 'sk-cg-nope', baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const denied = await failure(badKey.chat.completions.create({ model: 'local/echo', messages: [{ role: 'user', content: 'x' }] }))
    expect(denied).toBeInstanceOf(OpenAI.AuthenticationError)
  })

  test('raw fetch shows every header the spec names', async () => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': gateway.firstKey!, 'x-request-id': 'e2e-1' },
      body: JSON.stringify({ model: 'acme/fast', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('x-svc-tier')).toBe('team')
    expect(response.headers.get('x-svc-model')).toBe('fake-model-1')
    expect(response.headers.get('x-svc-upstream')).toBe('fake')
    expect(response.headers.get('x-svc-latency-ms')).toMatch(/^\d+$/)
    expect(response.headers.get('x-ratelimit-limit')).toBe('600')
    expect(Number(response.headers.get('x-ratelimit-remaining'))).toBeLessThan(600)
    expect(response.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/)
    expect(response.headers.get('x-request-id')).toBe('e2e-1')
  })

  test('the CLI creates a key the running server accepts, and revokes it', async () => {
    const created = await runCli(['keys', 'create', '--name', 'e2e', '--tier', 'team', '--json'], env)
    expect(created.code).toBe(0)
    const record = JSON.parse(created.stdout) as { id: string; key: string; prefix: string; tier: string; name: string }
    expect(record).toMatchObject({ name: 'e2e', tier: 'team', prefix: record.key.slice(0, 12) })
    const call = () =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${record.key}` },
        body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'hi' }] }),
      })
    // Created by another process: it works on the very next request.
    expect((await call()).status).toBe(200)

    const listed = await runCli(['keys', 'list', '--json'], env)
    const keys = JSON.parse(listed.stdout) as Record<string, unknown>[]
    expect(keys.map((k) => k.prefix)).toContain(record.prefix)
    expect(listed.stdout).not.toContain(record.key)

    expect((await runCli(['keys', 'revoke', record.prefix], env)).code).toBe(0)
    // Revoked by another process: refused once the key-table poll sees it (every 250 ms).
    await waitFor(async () => (await call()).status === 401, 'the revoked key to be refused')
  })

  test('neither the caller key nor the upstream key appears in the logs or the database', async () => {
    const logs = gateway.output()
    const firstKeyLine = logs.split('\n').filter((line) => line.includes(gateway.firstKey!))
    // Printed exactly once, on its own line, at creation.
    expect(firstKeyLine).toEqual([gateway.firstKey!])
    expect(logs).not.toContain('upstream-secret-123')
    const database = await Bun.file(`${dir.path}/gateway.sqlite`).arrayBuffer()
    const wal = Bun.file(`${dir.path}/gateway.sqlite-wal`)
    const text = new TextDecoder('latin1').decode(database) + ((await wal.exists()) ? new TextDecoder('latin1').decode(await wal.arrayBuffer()) : '')
    expect(text).not.toContain(gateway.firstKey!)
    expect(text).not.toContain('upstream-secret-123')
  })
})

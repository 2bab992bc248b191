import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { queryUsage, utcDate } from '../src/usage/recorder'
import { inProcessGateway, type InProcessGateway, json, tempDir, writeConfig } from './support/gateway'
import { type FakeUpstream, fakeUpstream, openaiCompletion } from './support/upstream'

/** Failure modes picked per request by the last message's content. */
function faultyUpstream(): FakeUpstream {
  return fakeUpstream(async (req) => {
    const mode = (req.body.messages as { content: string }[]).at(-1)!.content
    const model = String(req.body.model)
    switch (mode) {
      case '500':
        return Response.json({ error: { message: 'boom', type: 'server_error' } }, { status: 500 })
      case '400':
        return Response.json({ error: { message: 'max_tokens is too large for this model', type: 'invalid_request_error' } }, { status: 400 })
      case '401':
        return Response.json({ error: { message: 'Incorrect API key provided: sk-up***' } }, { status: 401 })
      case 'html':
        return new Response('<html><body><h1>502 Bad Gateway</h1></body></html>', { status: 200, headers: { 'content-type': 'text/html' } })
      case 'garbage':
        return new Response('{"id": "x", "choices": [', { headers: { 'content-type': 'application/json' } })
      case 'hang':
        await Bun.sleep(2_000)
        return openaiCompletion(model, 'too late')
      case 'cut': {
        const encoder = new TextEncoder()
        const chunk = (content: string) =>
          `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`
        const body = new ReadableStream({
          async start(controller) {
            for (const piece of ['one', ' two', ' three']) {
              controller.enqueue(encoder.encode(chunk(piece)))
              await Bun.sleep(5)
            }
            controller.error(new Error('upstream died'))
          },
        })
        return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
      }
      default:
        return openaiCompletion(model, `ok: ${mode}`)
    }
  })
}

describe('upstream failures', () => {
  const dir = tempDir()
  let upstream: FakeUpstream
  let gw: InProcessGateway
  const call = (content: string, extra: Record<string, unknown> = {}, model = 'faulty/one') =>
    gw.request('/v1/chat/completions', json({ model, messages: [{ role: 'user', content }], ...extra }, { authorization: `Bearer ${gw.key}` }))

  beforeAll(async () => {
    upstream = faultyUpstream()
    const config = writeConfig(
      dir.path,
      `
[tiers.t]
requests_per_minute = 1000
tokens_per_minute = 1000000
max_concurrent = 16

[upstreams.faulty]
kind = "openai"
base_url = "${upstream.url}"
timeout_ms = 300

[upstreams.dead]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"

[upstreams.local]
kind = "mock"

[aliases."faulty/one"]
targets = [{ upstream = "faulty", model = "m1" }]

[aliases."faulty/backed"]
targets = [{ upstream = "dead", model = "d1" }, { upstream = "faulty", model = "m2" }]
`,
    )
    gw = await inProcessGateway({ env: { GATEWAY_CONFIG: config } })
  })
  afterAll(() => {
    gw.close()
    upstream.stop()
    dir[Symbol.dispose]()
  })

  const errorOf = async (response: Response) => ((await response.json()) as { error: Record<string, string> }).error

  test('upstream 5xx: 502 upstream_error naming the upstream, headers name the target', async () => {
    const response = await call('500')
    expect(response.status).toBe(502)
    expect(await errorOf(response)).toMatchObject({ type: 'upstream_error' })
    expect(response.headers.get('x-svc-upstream')).toBe('faulty')
    expect(response.headers.get('x-svc-model')).toBe('m1')
  })

  test("upstream 4xx comes back with the upstream's status and message", async () => {
    const response = await call('400')
    expect(response.status).toBe(400)
    expect(await errorOf(response)).toMatchObject({ type: 'invalid_request_error', message: 'max_tokens is too large for this model' })
  })

  test('upstream 401 means our upstream key is wrong: 502, and the upstream message is not relayed', async () => {
    const response = await call('401')
    expect(response.status).toBe(502)
    const error = await errorOf(response)
    expect(error.type).toBe('upstream_error')
    expect(error.message).not.toContain('sk-up')
  })

  test('HTML or broken JSON from the upstream: 502', async () => {
    for (const mode of ['html', 'garbage']) {
      const response = await call(mode)
      expect(response.status).toBe(502)
      expect((await errorOf(response)).type).toBe('upstream_error')
    }
  })

  test('an upstream slower than timeout_ms: 504 timeout_error', async () => {
    const started = performance.now()
    const response = await call('hang')
    expect(response.status).toBe(504)
    expect((await errorOf(response)).type).toBe('timeout_error')
    expect(performance.now() - started).toBeLessThan(1500)
  })

  test('a dead first target fails over to the next one', async () => {
    const response = await call('hello', {}, 'faulty/backed')
    expect(response.status).toBe(200)
    expect(response.headers.get('x-svc-upstream')).toBe('faulty')
    expect(response.headers.get('x-svc-model')).toBe('m2')
    expect(response.headers.get('x-svc-attempts')).toBe('2')
  })

  test('a stream the upstream cuts ends with an error event and no [DONE], and counts as an error', async () => {
    const before = queryUsage(gw.gateway.storage.db, { from: utcDate(Date.now()), to: utcDate(Date.now()) }).totals
    const response = await call('cut', { stream: true })
    expect(response.status).toBe(200)
    const text = await response.text()
    expect(text).not.toContain('[DONE]')
    const events = text.split('\n\n').filter(Boolean)
    expect(events.length).toBe(4)
    const last = JSON.parse(events.at(-1)!.slice('data: '.length)) as { error: { type: string } }
    expect(last.error.type).toBe('upstream_error')
    const after = queryUsage(gw.gateway.storage.db, { from: utcDate(Date.now()), to: utcDate(Date.now()) }).totals
    expect(after.requests - before.requests).toBe(1)
    expect(after.errors - before.errors).toBe(1)
  })
})

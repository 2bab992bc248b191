import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { tempDir, writeConfig } from '../support/gateway'
import { TEARDOWN_MS, TEST_MS } from '../support/hooks'
import { type HoldingUpstream, holdingUpstream } from '../support/holding-upstream'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { waitFor } from '../support/wait'

setDefaultTimeout(TEST_MS)

/**
 * Regression (issue 23): past the runtime's cap on concurrent fetches, requests waited in its queue
 * until their connect timeout failed them. Now the bound is the operator's, `[http]
 * max_upstream_connections`: a request over it is refused at once with 503 `overloaded_error`, code
 * `upstream_connection_limit` and `Retry-After: 1`, and each request gives its connection back when
 * its attempt ends, however it ends (a stream finished or cut, a JSON answer, an upstream error).
 */
const BOUND = 3

const config = (upstream: string) => `
[http]
max_upstream_connections = ${BOUND}

[routing]
drain_ms = 0

[tiers.standard]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000

[upstreams.held]
kind = "openai"
base_url = "${upstream}"
max_retries = 0
failure_threshold = 2

[aliases."t/held"]
targets = [ { upstream = "held", model = "m-held" } ]
`

describe(`[http] max_upstream_connections = ${BOUND}`, () => {
  const dir = tempDir()
  let upstream: HoldingUpstream
  let gw: GatewayProcess
  let key: string

  beforeAll(async () => {
    upstream = holdingUpstream()
    gw = await spawnGateway({ GATEWAY_DB: join(dir.path, 'gw.sqlite'), GATEWAY_CONFIG: writeConfig(dir.path, config(upstream.url)) }, { expectFirstKey: true })
    key = gw.firstKey!
  }, 60_000)

  afterAll(async () => {
    upstream?.releaseAll()
    await gw?.stop()
    upstream?.stop()
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  const post = (tag: string, stream: boolean, signal?: AbortSignal) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 't/held', stream, messages: [{ role: 'user', content: tag }] }),
      signal,
    })

  /** Opens a stream the upstream holds; resolves once it is held there. */
  async function hold(tag: string, signal?: AbortSignal): Promise<Response> {
    const response = await post(tag, true, signal)
    if (response.status !== 200) throw new Error(`${tag}: ${response.status} ${await response.text()}`)
    await waitFor(() => upstream.seen(tag), `the upstream to receive "${tag}"`)
    return response
  }

  /** Refused at once: 503 with the documented body and Retry-After, and nothing sent upstream. */
  async function expectRefused(tag: string, stream: boolean): Promise<void> {
    const response = await post(tag, stream)
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('1')
    const body = (await response.json()) as { error: { type: string; code: string | null } }
    expect(body.error.type).toBe('overloaded_error')
    expect(body.error.code).toBe('upstream_connection_limit')
    expect(upstream.seen(tag)).toBe(false)
  }

  test('the start line names the bound', () => {
    expect(gw.output()).toContain(`"max_upstream_connections":${BOUND}`)
  })

  test('one request over the bound is refused at once, and each way a request ends gives its connection back', async () => {
    const a = await hold('a')
    const cut = new AbortController()
    const b = await hold('b', cut.signal)
    const c = await hold('c')
    expect(upstream.holding).toBe(BOUND)

    // Refused while all three are still held: the answer did not wait for a connection to free up.
    await expectRefused('d', true)
    await expectRefused('json-d', false)
    expect(upstream.holding).toBe(BOUND)

    // A stream that ends gives its connection back before its end reaches the caller.
    upstream.release('a')
    expect(await a.text()).toContain('data: [DONE]')
    const e = await hold('e')

    // A stream the caller cuts gives it back once the gateway hangs up on the upstream (drain_ms = 0).
    cut.abort()
    await b.text().catch(() => '')
    await waitFor(() => upstream.aborted('b'), 'the gateway to hang up on the cut stream')
    const f = await hold('f')
    await expectRefused('g', true)

    // A JSON answer and an upstream error each hold a connection only while they last.
    upstream.release('c')
    expect(await c.text()).toContain('data: [DONE]')
    const json = await post('json-ok', false)
    expect(json.status).toBe(200)
    expect(((await json.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe('not held')
    const failed = await post('fail-once', false)
    expect(failed.status).toBe(502)
    await failed.text()

    // Exactly the bound again: not one connection lost, not one counted twice.
    const h = await hold('h')
    expect(upstream.holding).toBe(BOUND)
    await expectRefused('i', true)

    upstream.releaseAll()
    for (const response of [e, f, h]) expect(await response.text()).toContain('data: [DONE]')
  })
})

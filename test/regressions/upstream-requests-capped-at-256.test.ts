import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { tempDir, writeConfig } from '../support/gateway'
import { TEARDOWN_MS, TEST_MS } from '../support/hooks'
import { type HoldingUpstream, holdingUpstream } from '../support/holding-upstream'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { type RawRequest, rawPost } from '../support/raw-http'
import { waitFor } from '../support/wait'

setDefaultTimeout(TEST_MS)

/**
 * Regression (issue 23): 2,000 clients each streaming a long completion through one instance; the
 * upstream never saw more than about 256 connections, and 1,744 of the streams failed. Bun's `fetch`
 * serves 256 requests at a time per process unless BUN_CONFIG_MAX_HTTP_REQUESTS says otherwise, and
 * the rest waited in its queue until their connect timeout failed them. Now the runtime's cap follows
 * `[http] max_upstream_connections` (default 10,000), so one instance holds 4,000 streams at once.
 *
 * The streams last until the fake upstream lets them go, not a fixed time: the test waits until the
 * upstream holds all of them, then releases them and waits until every caller saw its stream end.
 */
const STREAMS = 4_000

const config = (upstream: string) => `
[tiers.many]
requests_per_minute = 1000000
tokens_per_minute = 1000000000
max_concurrent = 100000

[upstreams.held]
kind = "openai"
base_url = "${upstream}"
max_retries = 0

[aliases."t/held"]
targets = [ { upstream = "held", model = "m-held" } ]
`

describe(`one instance holds ${STREAMS} concurrent streams`, () => {
  const dir = tempDir()
  let upstream: HoldingUpstream
  let gw: GatewayProcess
  let key: string

  beforeAll(async () => {
    upstream = holdingUpstream()
    // Started without BUN_CONFIG_MAX_HTTP_REQUESTS, as by an operator who never heard of it: the
    // server raises the runtime's cap itself.
    gw = await spawnGateway(
      { GATEWAY_DB: join(dir.path, 'gw.sqlite'), GATEWAY_CONFIG: writeConfig(dir.path, config(upstream.url)) },
      { expectFirstKey: true, presetFetchCap: false },
    )
    key = gw.firstKey!
  }, 60_000)

  afterAll(async () => {
    await gw?.stop()
    upstream?.stop()
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  test('every stream reaches the upstream at once, and every one completes', async () => {
    const url = `${gw.url}/v1/chat/completions`
    const headers = { authorization: `Bearer ${key}` }
    const requests: RawRequest[] = []
    // Opened in waves, each once the last is held upstream: thousands of connects at one instant
    // would overflow the listen backlog, and the kernel would retry them seconds later.
    for (let opened = 0; opened < STREAMS;) {
      const wave = Math.min(500, STREAMS - opened)
      const bodies = Array.from({ length: wave }, (_, i) =>
        JSON.stringify({ model: 't/held', stream: true, messages: [{ role: 'user', content: `s${opened + i}` }] }),
      )
      requests.push(...(await Promise.all(bodies.map((body) => rawPost(url, headers, body)))))
      opened += wave
      const failed = () => requests.find((r) => r.response.error !== null || (r.response.status !== null && r.response.status !== 200))?.response
      await waitFor(
        () => {
          const failure = failed()
          if (failure) throw new Error(`a stream failed: ${failure.status} ${failure.error ?? failure.body}\n${gw.output().slice(-2000)}`)
          return upstream.holding === opened
        },
        () => `the upstream to hold ${opened} streams (it holds ${upstream.holding})`,
      )
    }
    expect(upstream.mostHeld).toBe(STREAMS)

    upstream.releaseAll()
    await waitFor(
      () => requests.every((r) => r.response.closed),
      () => `every stream to end (${requests.filter((r) => r.response.closed).length} of ${STREAMS} did)`,
      { timeoutMs: 45_000 },
    )
    const incomplete = requests.filter((r) => r.response.status !== 200 || !r.response.complete || !r.response.body.includes('data: [DONE]'))
    expect(incomplete.map((r) => `${r.response.status} ${r.response.error ?? r.response.body.slice(0, 200)}`).slice(0, 5)).toEqual([])
    expect(gw.output()).not.toContain('upstream_connection_limit')
  })
})

import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { tempDir, writeConfig } from '../support/gateway'
import { type HeldStreams, heldStreams } from '../support/held-streams'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { mountSmallDisk, type SmallDisk, smallDiskMissing } from '../support/small-disk'
import { waitFor } from '../support/wait'
import { SETUP_MS, setup, teardown, TEARDOWN_MS, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

/**
 * Regression: with the database on a full disk, JSON callers got bare 500s, yet once space returned
 * every request made during the outage was billed as a success; streams delivered the whole answer
 * and stopped with neither [DONE] nor an error event, logged as 200; /health said ok throughout; a
 * settle that threw was settled a second time. Now every request settles once, a request whose
 * usage cannot be made durable gets 503 usage_unavailable and is not billed, /health names the
 * usage store, and service resumes by itself when space returns.
 */
const missing = smallDiskMissing('the full-disk suite')

const config = (upstream: string) => `
[tiers.standard]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 100

[upstreams.local]
kind = "mock"

[upstreams.oa]
kind = "openai"
base_url = "${upstream}"
api_key_env = "FAKE_UPSTREAM_KEY"

[aliases."local/echo"]
targets = [ { upstream = "local", model = "echo" } ]

[aliases."t/oa"]
targets = [ { upstream = "oa", model = "gpt-held" } ]
`

const chat = (gw: GatewayProcess, key: string, model: string, content: string, stream = false) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content }] }),
  })

const errorOf = async (response: Response) => ((await response.json()) as { error: { type: string; code: string } }).error

async function inFlight(gw: GatewayProcess): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text()
  return Number(/^chatgate_in_flight_requests (\d+)/m.exec(text)?.[1] ?? NaN)
}

describe.skipIf(missing !== null)(`a full disk${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const dir = tempDir('chatgate-full-disk-')
  let disk: SmallDisk
  let upstream: HeldStreams
  let gw: GatewayProcess
  let key: string

  setup(async () => {
    disk = mountSmallDisk(8 * 1024 * 1024)
    upstream = heldStreams()
    gw = await spawnGateway(
      {
        GATEWAY_DB: join(disk.path, 'gateway.sqlite'),
        GATEWAY_CONFIG: writeConfig(dir.path, config(upstream.url)),
        FAKE_UPSTREAM_KEY: 'sk-fake-upstream',
      },
      { expectFirstKey: true },
    )
    key = gw.firstKey!
  }, SETUP_MS)

  teardown(async () => {
    await gw?.stop()
    upstream?.stop()
    disk?.dispose()
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  test('nothing served that is not counted, nothing billed that was not served, and service resumes by itself', async () => {
    // A stream admitted before the disk fills, held part-way.
    const held = await chat(gw, key, 't/oa', 'held through the outage', true)
    expect(held.status).toBe(200)
    const heldReader = held.body!.getReader()
    await heldReader.read()

    disk.fill()
    // The journal's last page may still take a few lines; then a write fails, and that answer is not given out.
    let served = 0
    let refused: Response | null = null
    for (let i = 0; i < 2000 && refused === null; i++) {
      const response = await chat(gw, key, 'local/echo', `during ${i}`)
      if (response.status === 200) served++
      else refused = response
    }
    expect(refused?.status).toBe(503)
    expect(await errorOf(refused!)).toMatchObject({ type: 'overloaded_error', code: 'usage_unavailable' })
    expect(refused!.headers.get('retry-after')).toBe('1')

    // From now on requests are refused before they reach an upstream.
    const again = await chat(gw, key, 't/oa', 'never sent upstream', true)
    expect(again.status).toBe(503)
    expect((await errorOf(again)).code).toBe('usage_unavailable')
    expect(upstream.seen('never sent upstream')).toBe(false)

    const health = await fetch(`${gw.url}/health`)
    expect(health.status).toBe(503)
    expect(((await health.json()) as { usage: string }).usage).toStartWith('unavailable')

    // The stream admitted before ends with the error event, never [DONE]: its usage could not be recorded.
    upstream.release('held through the outage')
    let rest = ''
    for (;;) {
      const { value, done } = await heldReader.read()
      if (done) break
      rest += new TextDecoder().decode(value)
    }
    expect(rest).toContain('usage_unavailable')
    expect(rest).not.toContain('[DONE]')

    await waitFor(async () => (await inFlight(gw)) === 0, 'chatgate_in_flight_requests to return to 0')

    // Space returns: the gateway notices by itself.
    disk.free()
    let resumed = 0
    await waitFor(async () => (await chat(gw, key, 'local/echo', 'after')).status === 200 && ++resumed, 'a request to be served again')
    await waitFor(async () => (await fetch(`${gw.url}/health`)).status === 200, '/health to be ok again')

    // Billed: exactly the answers that were given out.
    const usage = (await (await fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json()) as { totals: { requests: number } }
    expect(usage.totals.requests).toBe(served + resumed)
    expect(await inFlight(gw)).toBe(0)
  })
})

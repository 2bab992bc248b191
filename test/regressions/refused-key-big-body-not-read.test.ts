import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { tempDir, writeConfig } from '../support/gateway'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { SETUP_MS, setup, teardown, TEARDOWN_MS, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

/**
 * Regression (issue 23, point 3): a key of a tight tier hammering `/v1/messages/count_tokens` with
 * ~880 KB bodies made the gateway read and parse every body before refusing it, which stalled every
 * other caller (another key's p50 went from 0.7 ms to tens of milliseconds). A large request from a
 * key whose request window is already full is now refused from its headers alone, before its body
 * is read. Shown here with a body that never finishes arriving: the 429 comes anyway.
 */
const CONFIG = `
[tiers.tight]
requests_per_minute = 1
tokens_per_minute = 100000000
max_concurrent = 10

[upstreams.local]
kind = "mock"

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
`

/**
 * Sends a request whose head says `length` bytes of body but only `sent` of them, over a raw socket,
 * and resolves with the status line and headers of whatever answer comes back.
 */
function partialBodyRequest(url: string, key: string, length: number, sent: string): Promise<string> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    let answer = ''
    void Bun.connect({
      hostname,
      port: Number(port),
      socket: {
        open(socket) {
          socket.write(
            `POST /v1/messages/count_tokens HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nx-api-key: ${key}\r\n` +
              `anthropic-version: 2023-06-01\r\nContent-Length: ${length}\r\n\r\n${sent}`,
          )
        },
        data(socket, data) {
          answer += data.toString()
          if (answer.includes('\r\n\r\n')) {
            resolve(answer.slice(0, answer.indexOf('\r\n\r\n')))
            socket.end()
          }
        },
        error: (_socket, error) => reject(error),
        close: () => resolve(answer),
      },
    })
  })
}

describe("a refused key's large body is not read", () => {
  const dir = tempDir('chatgate-early-refusal-')
  let gw: GatewayProcess

  setup(async () => {
    gw = await spawnGateway({ GATEWAY_DB: join(dir.path, 'gw.sqlite'), GATEWAY_CONFIG: writeConfig(dir.path, CONFIG) }, { expectFirstKey: true })
  }, SETUP_MS)

  teardown(async () => {
    await gw?.stop()
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  test('a full request window answers 429 from the headers, while the body is still on its way', async () => {
    const key = gw.firstKey!
    const first = await fetch(`${gw.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'one two' }] }),
    })
    expect(first.status).toBe(200)

    // 1 MB announced, 64 KiB sent, the rest never: only a refusal decided before the body can answer.
    const head = await partialBodyRequest(gw.url, key, 1_000_000, `{"model":"local/echo","messages":[{"role":"user","content":"${'a'.repeat(65_536)}`)
    expect(head).toStartWith('HTTP/1.1 429')
    expect(head.toLowerCase()).toContain('retry-after:')
  })

  test('a key with room left is not refused early: its body is read as usual', async () => {
    const response = await fetch(`${gw.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-cg-unknownunknownunknownunknownunknownunkn' },
      body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'x'.repeat(70_000) }] }),
    })
    // An unknown key is never judged on its headers: authentication answers first.
    expect(response.status).toBe(401)
  })
})

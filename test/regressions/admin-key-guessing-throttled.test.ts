import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { ADMIN_THROTTLE, addressKey, FailureThrottle } from '../../src/http/admin-throttle'
import { inProcessGateway, type InProcessGateway, tempDir } from '../support/gateway'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { SETUP_MS, setup, teardown, TEARDOWN_MS, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

// Issue 23, point 8b: admin-key guessing was not throttled (about 30,000 wrong keys a second were
// answered 401). Failed admin authentications are now throttled per client address: past the
// allowance, 429 with Retry-After in OpenAI's error shape; the admin key itself always works, from
// a throttled address too; the throttle's memory is bounded.

const ADMIN_KEY = 'admin-key-for-throttle-tests-0123'
const wrongKey = () => `wrong-${crypto.randomUUID()}`
const adminGet = (url: string, key: string, path = '/admin/tiers') => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } })

describe('a guesser against the real server', () => {
  const dir = tempDir()
  let gateway: GatewayProcess

  setup(async () => {
    gateway = await spawnGateway({ GATEWAY_DB: join(dir.path, 'gateway.sqlite'), GATEWAY_ADMIN_KEY: ADMIN_KEY })
  }, SETUP_MS)
  teardown(async () => {
    await gateway?.stop()
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  test('wrong keys: 401 within the allowance, then 429 with Retry-After in the OpenAI shape; the admin key still works at once', async () => {
    const started = Date.now()
    const first = await Promise.all(Array.from({ length: ADMIN_THROTTLE.burst }, () => adminGet(gateway.url, wrongKey())))
    expect(first.map((r) => r.status)).toEqual(Array(ADMIN_THROTTLE.burst).fill(401))

    // A burst of guesses, spread over several admin routes and both headers: almost all refused with 429.
    const paths = ['/admin/tiers', '/admin/keys', '/admin/config', '/admin/usage']
    const guesses = await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        fetch(`${gateway.url}${paths[i % paths.length]}`, { headers: i % 2 ? { 'x-api-key': wrongKey() } : { authorization: `Bearer ${wrongKey()}` } }),
      ),
    )
    const statuses = guesses.map((r) => r.status)
    // Only the allowance's refill while the burst ran is answered 401: one per refill period.
    const refilled = Math.floor((Date.now() - started) / ADMIN_THROTTLE.refillMs) + 1
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(refilled)
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(400 - refilled)
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true)

    const refused = guesses.find((r) => r.status === 429)!
    const retryAfter = Number(refused.headers.get('retry-after'))
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= Math.ceil(ADMIN_THROTTLE.refillMs / 1000)).toBe(true)
    expect(refused.headers.get('cache-control')).toBe('no-store')
    expect(await refused.json()).toMatchObject({
      error: { message: expect.stringContaining('failed admin authentications'), type: 'rate_limit_error', code: 'admin_auth_throttled' },
    })

    // The same (throttled) address with the admin key: served, every time, both headers.
    const valid = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        i % 2 ? fetch(`${gateway.url}/admin/keys`, { headers: { 'x-api-key': ADMIN_KEY } }) : adminGet(gateway.url, ADMIN_KEY, paths[i % paths.length]),
      ),
    )
    expect(valid.map((r) => r.status)).toEqual(Array(50).fill(200))
    // No key at all is not a guess: a plain 401, as before.
    expect((await fetch(`${gateway.url}/admin/tiers`)).status).toBe(401)
    // A caller's own API is not the admin API: untouched by the throttle.
    expect((await fetch(`${gateway.url}/health`)).status).toBe(200)
  })
})

describe('per client address, with bounded memory', () => {
  let gw: InProcessGateway
  setup(async () => {
    gw = await inProcessGateway({ env: { GATEWAY_ADMIN_KEY: ADMIN_KEY } })
    // What main.ts does with the listener's server.requestIP, simulated by a header.
    gw.gateway.clientAddress = (request) => request.headers.get('x-test-client')
  }, SETUP_MS)
  teardown(async () => {
    await gw?.close()
  }, TEARDOWN_MS)

  const from = (address: string, key: string) => gw.request('/admin/tiers', { headers: { authorization: `Bearer ${key}`, 'x-test-client': address } })
  const exhaust = async (address: string) => {
    for (let i = 0; i < ADMIN_THROTTLE.burst; i++) expect((await from(address, wrongKey())).status).toBe(401)
    expect((await from(address, wrongKey())).status).toBe(429)
  }

  test('one address throttled leaves the others alone; an IPv6 /64 is one address', async () => {
    await exhaust('198.51.100.7')
    expect((await from('198.51.100.7', ADMIN_KEY)).status).toBe(200)
    expect((await from('198.51.100.8', wrongKey())).status).toBe(401)
    expect((await from('::ffff:198.51.100.7', wrongKey())).status).toBe(429)

    await exhaust('2001:db8:1:2::1')
    expect((await from('2001:db8:1:2:ffff::9', wrongKey())).status).toBe(429)
    expect((await from('2001:db8:1:3::1', wrongKey())).status).toBe(401)
  })

  test('failures from more addresses than it tracks: the oldest are forgotten, so memory stays bounded', async () => {
    await exhaust('203.0.113.1')
    for (let i = 0; i < ADMIN_THROTTLE.maxAddresses; i++) await from(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, wrongKey())
    // Forgotten: its allowance starts afresh.
    expect((await from('203.0.113.1', wrongKey())).status).toBe(401)
  })

  test('the throttle itself: refill, Retry-After, eviction', () => {
    let now = 0
    const throttle = new FailureThrottle({ burst: 3, refillMs: 6_000, maxAddresses: 2, now: () => now })
    expect([throttle.fail('a'), throttle.fail('a'), throttle.fail('a')]).toEqual([0, 0, 0])
    expect(throttle.fail('a')).toBe(6)
    now += 4_500
    expect(throttle.fail('a')).toBe(2)
    now += 1_500
    expect(throttle.fail('a')).toBe(0)
    throttle.fail('b')
    throttle.fail('c')
    expect(throttle.size).toBe(2)
    expect(addressKey(null)).toBe('unknown')
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64')
  })
})

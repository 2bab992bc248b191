import { expect, setDefaultTimeout, test } from 'bun:test'
import { adminFetch, chat, type Cluster, createKey, startCluster } from '../support/cluster'
import { setup, teardown, TEST_MS } from '../support/hooks'
import type { GatewayProcess } from '../support/process'
import { describeWithServers } from '../support/servers'
import { fakeUpstream, type FakeUpstream, openaiCompletion } from '../support/upstream'
import { waitFor } from '../support/wait'

setDefaultTimeout(TEST_MS)

/**
 * The providers' own limits across a cluster: 3 real gateway processes on one real Redis and one real
 * Postgres. A target's rpm is counted in Redis, so the instances together send it exactly its rpm;
 * an upstream 429's retry-after rests the target on every instance.
 */

const RETRY_AFTER_S = 2

const config = (capped: string, spare: string, limited: string, backup: string) => `
[tiers.pro]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000

[upstreams.capped]
kind = "openai"
base_url = "${capped}"
max_retries = 0

[upstreams.spare]
kind = "openai"
base_url = "${spare}"
max_retries = 0

[upstreams.limited]
kind = "openai"
base_url = "${limited}"
max_retries = 0

[upstreams.backup]
kind = "openai"
base_url = "${backup}"
max_retries = 0

[aliases."cap/x"]
targets = [{ upstream = "capped", model = "m", rpm = 30 }, { upstream = "spare", model = "m" }]

[aliases."cap/only"]
targets = [{ upstream = "capped", model = "solo", rpm = 30 }]

[aliases."tpm/x"]
targets = [{ upstream = "capped", model = "tpm-model", tpm = 20 }, { upstream = "spare", model = "tpm-model" }]

[aliases."rest/x"]
targets = [{ upstream = "limited", model = "m" }, { upstream = "backup", model = "m" }]
`

/** Sends `count` requests at once, spread over the instances in turn. */
const burst = (instances: GatewayProcess[], key: string, count: number, model: string) =>
  Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const response = await chat(instances[i % instances.length]!.url, key, `burst ${i}`, model)
      const body = (await response.json()) as { error?: { type?: string; code?: string } }
      return {
        status: response.status,
        upstream: response.headers.get('x-svc-upstream'),
        type: body.error?.type ?? null,
        code: body.error?.code ?? null,
        retryAfter: response.headers.get('retry-after'),
      }
    }),
  )

describeWithServers('routing by load in a cluster (3 processes, one Redis, one Postgres)', ['redis', 'postgres'], () => {
  let cluster: Cluster
  let instances: GatewayProcess[]
  let key: string
  const upstreams: Record<'capped' | 'spare' | 'limited' | 'backup', FakeUpstream> = {} as never
  /** When `limited` answered its 429 (this process's clock), and when each later request reached it. */
  let throttledAt: number | null = null
  const limitedArrivals: number[] = []
  setup(async () => {
    upstreams.capped = fakeUpstream((r) => openaiCompletion(String(r.body.model), 'capped'))
    upstreams.spare = fakeUpstream((r) => openaiCompletion(String(r.body.model), 'spare'))
    upstreams.backup = fakeUpstream((r) => openaiCompletion(String(r.body.model), 'backup'))
    upstreams.limited = fakeUpstream((r) => {
      if (throttledAt === null) {
        throttledAt = performance.now()
        return Response.json({ error: { message: 'Rate limit reached', type: 'requests' } }, { status: 429, headers: { 'retry-after': String(RETRY_AFTER_S) } })
      }
      limitedArrivals.push(performance.now())
      return openaiCompletion(String(r.body.model), 'limited')
    })
    const { capped, spare, limited, backup } = upstreams
    cluster = await startCluster(config(capped.url, spare.url, limited.url, backup.url))
    instances = await cluster.start(3)
    ;({ key } = await createKey(instances[0]!.url, { name: 'routing-by-load', tier: 'pro' }))
  })
  teardown(async () => {
    await cluster?.dispose()
    for (const upstream of Object.values(upstreams)) upstream?.stop()
  })

  const received = (upstream: FakeUpstream, model: string) => upstream.requests.filter((r) => r.body.model === model).length

  test('a target with rpm 30, 100 concurrent requests over 3 instances: it receives exactly 30, the next target the other 70', async () => {
    const results = await burst(instances, key, 100, 'cap/x')
    expect(results.every((r) => r.status === 200)).toBe(true)
    expect(received(upstreams.capped, 'm')).toBe(30)
    expect(received(upstreams.spare, 'm')).toBe(70)
    expect(results.filter((r) => r.upstream === 'capped')).toHaveLength(30)
    expect(results.filter((r) => r.upstream === 'spare')).toHaveLength(70)
  })

  test('with no target left: exactly 30 served, the other 70 get 429 rate_limit_error upstream_capacity with Retry-After', async () => {
    const results = await burst(instances, key, 100, 'cap/only')
    expect(received(upstreams.capped, 'solo')).toBe(30)
    expect(results.filter((r) => r.status === 200)).toHaveLength(30)
    const refused = results.filter((r) => r.status !== 200)
    expect(refused).toHaveLength(70)
    for (const r of refused) {
      expect(r).toMatchObject({ status: 429, type: 'rate_limit_error', code: 'upstream_capacity' })
      expect(Number(r.retryAfter)).toBeGreaterThan(0)
    }
  })

  test("the request log's attempts hold the skipped target: {upstream, model, skipped: 'rpm'}", async () => {
    const record = await waitFor(async () => {
      const response = await adminFetch(instances[1]!.url, `/admin/requests?alias=${encodeURIComponent('cap/x')}&upstream=spare&limit=1`)
      const page = (await response.json()) as { data: { attempts: Record<string, unknown>[] }[] }
      return page.data?.[0]
    }, 'a request of cap/x served by spare in the request log')
    expect(record.attempts[0]).toMatchObject({ upstream: 'capped', model: 'm', skipped: 'rpm' })
    expect(record.attempts.at(-1)).toMatchObject({ upstream: 'spare', model: 'm', outcome: 'ok' })
  })

  test('a target with tpm 20: its answers (18 tokens each) spend it after two, then it is skipped for the next target, on every instance', async () => {
    const servedBy: string[] = []
    for (let i = 0; i < 5; i++) {
      const response = await chat(instances[i % 3]!.url, key, `tokens ${i}`, 'tpm/x')
      expect(response.status).toBe(200)
      servedBy.push(response.headers.get('x-svc-upstream')!)
    }
    expect(servedBy).toEqual(['capped', 'capped', 'spare', 'spare', 'spare'])
    expect(received(upstreams.capped, 'tpm-model')).toBe(2)
  })

  test(`an upstream 429 with retry-after: ${RETRY_AFTER_S} rests the target on every instance: none sends it anything until the rest ends, then it is used again`, async () => {
    const first = await chat(instances[0]!.url, key, 'meets the 429', 'rest/x')
    expect(first.status).toBe(200)
    expect(first.headers.get('x-svc-upstream')).toBe('backup')
    expect(throttledAt).not.toBeNull()
    // One request through each instance at once, right after: the other instances skip the target too.
    const during = await Promise.all(instances.map((instance) => chat(instance.url, key, 'during the rest', 'rest/x')))
    for (const response of during) expect(response.headers.get('x-svc-upstream')).toBe('backup')
    // Then one request after another, instance after instance, until the target serves again.
    let turn = 0
    await waitFor(
      async () => (await chat(instances[turn++ % 3]!.url, key, 'after the rest?', 'rest/x')).headers.get('x-svc-upstream') === 'limited',
      'the rested target to serve again',
      { intervalMs: 20 },
    )
    // Nothing reached it before its rest ended (Redis counts whole milliseconds: 2 ms of slack).
    expect(limitedArrivals.length).toBe(1)
    expect(limitedArrivals[0]! - throttledAt!).toBeGreaterThanOrEqual(RETRY_AFTER_S * 1000 - 2)
    expect(turn).toBeGreaterThan(3)
  })
})

import { expect, setDefaultTimeout, test } from 'bun:test'
import postgres from 'postgres'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { adminFetch, chat, type Cluster, createKey, heldUpstream, startCluster, usageTotals } from '../support/cluster'
import type { GatewayProcess } from '../support/process'
import { describeWithServers } from '../support/servers'
import { waitFor } from '../support/wait'
import { setup, teardown, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const CONFIG = `
[tiers.pro]
requests_per_minute = 10000000
tokens_per_minute = 1000000000
max_concurrent = 100000

[upstreams.local]
kind = "mock"

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
`

/** The words the mock counts for `content` (prompt and completion alike). */
const words = (content: string) => content.split(/\s+/).filter(Boolean).length

interface LoadResult {
  /** Responses read to the end with status 200, and their prompt tokens. */
  received: number
  tokens: number
  /** Requests cut by a killed instance: sent, never answered. Each may or may not have been counted. */
  cut: number
}

/**
 * Load spread over the live instances by `workers` clients, until `stop()`: each client takes the
 * instances in turn, from its own offset, so every instance always has some in flight. A client
 * whose instance was killed moves on to the next live one. A response counts as received once it
 * was read to its end.
 */
function load(instances: () => GatewayProcess[], killed: ReadonlySet<GatewayProcess>, key: string, workers = 12) {
  const result: LoadResult = { received: 0, tokens: 0, cut: 0 }
  let running = true
  let n = 0
  const done = Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      for (let turn = 0; running; turn++) {
        const live = instances()
        const instance = live[(worker + turn) % live.length]!
        const content = `load ${n++} ${'w '.repeat(n % 7)}`.trim()
        try {
          const response = await chat(instance.url, key, content)
          const body = (await response.json()) as { usage?: { prompt_tokens: number } }
          if (response.status !== 200) throw new Error(`status ${response.status}: ${JSON.stringify(body)}`)
          result.received++
          result.tokens += body.usage!.prompt_tokens
          if (body.usage!.prompt_tokens !== words(content)) throw new Error('the mock counted other words')
        } catch (error) {
          // Only a request to an instance that was killed may fail.
          if (!killed.has(instance)) throw error
          result.cut++
        }
      }
    }),
  )
  return {
    result,
    async stop() {
      running = false
      await done
      return result
    },
  }
}

/** Answers the SIGKILL test waits for after the kill. */
const AFTER_KILL = 5000

const waitForTraffic = (result: LoadResult, atLeast: number) => waitFor(() => result.received >= atLeast, `at least ${atLeast} answered requests`)

describeWithServers('failures: instances killed, Redis and Postgres away', ['redis', 'postgres'], () => {
  let cluster: Cluster
  let instances: GatewayProcess[]
  let key: string
  let keyId: string
  /** Instances the tests killed: marked before the signal, so their cut requests are told apart from failures. */
  const killed = new Set<GatewayProcess>()
  const live = () => instances.filter((g) => !killed.has(g))
  const kill = async (instance: GatewayProcess) => {
    killed.add(instance)
    await instance.stop('SIGKILL')
  }
  setup(async () => {
    // A Postgres of its own: a test here stops and restarts it.
    cluster = await startCluster(CONFIG, { postgres: 'own' })
    instances = await cluster.start(3)
    ;({ key, id: keyId } = await createKey(instances[0]!.url, { name: 'load', tier: 'pro' }))
  })
  teardown(async () => {
    await cluster?.dispose()
  })

  /** Usage counted in Postgres must be every received response, once; cut requests may be either. */
  async function expectExact(before: { requests: number; prompt_tokens: number }, result: LoadResult) {
    const after = await usageTotals(live()[0]!.url)
    const counted = after.requests - before.requests
    console.log(`received ${result.received}, cut ${result.cut}, counted ${counted}`)
    expect(after.errors).toBe(0)
    expect(counted).toBeGreaterThanOrEqual(result.received)
    expect(counted).toBeLessThanOrEqual(result.received + result.cut)
    if (result.cut === 0) expect(after.prompt_tokens - before.prompt_tokens).toBe(result.tokens)
  }

  test('SIGKILL one instance under load spread over three: every response received is counted once', async () => {
    const before = await usageTotals(instances[0]!.url)
    const running = load(live, killed, key)
    try {
      await waitForTraffic(running.result, 2000)
      await kill(instances[1]!)
      // Counted in requests, not seconds: as many answers after the kill on the two instances left,
      // however fast the machine serves them (several of their folds, and the killed one's leftovers).
      await waitForTraffic(running.result, running.result.received + AFTER_KILL)
      await expectExact(before, await running.stop())
    } finally {
      await running.stop().catch(() => {})
      // The tests after this one start from three instances, whatever happened here.
      if (killed.has(instances[1]!)) instances[1] = (await cluster.start(1))[0]!
    }
  })

  test('a fold killed halfway (its instance SIGKILLed inside the fold transaction): nothing lost, nothing counted twice', async () => {
    // The key's daily row exists once one request was folded.
    expect((await chat(live()[0]!.url, key)).status).toBe(200)
    const before = await usageTotals(live()[0]!.url)
    const database = cluster.databaseUrl
    const sql = postgres(database, { max: 2, onnotice: () => {} })
    // Hold a lock on the daily row every fold of this load updates: the next fold blocks inside its
    // transaction, after it locked the stream's fold point and wrote its minute rows.
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let locked!: () => void
    const isLocked = new Promise<void>((resolve) => (locked = resolve))
    const holding = sql.begin(async (tx) => {
      await tx`SELECT 1 FROM usage_daily WHERE key_id = ${keyId} AND alias = 'local/echo' FOR UPDATE`
      locked()
      await released
    })
    await isLocked
    const running = load(live, killed, key)
    try {
      await waitForTraffic(running.result, 500)
      const blocked = await waitFor(async () => {
        const [session] = await sql<{ application_name: string }[]>`
          SELECT application_name FROM pg_stat_activity
          WHERE wait_event_type = 'Lock' AND query ILIKE 'insert into "usage_daily"%' AND application_name LIKE 'chatgate %' LIMIT 1`
        return session?.application_name
      }, 'a fold blocked inside its transaction')
      const pid = Number(/^chatgate (\d+)-/.exec(blocked)![1])
      const victim = instances.find((g) => g.proc.pid === pid)!
      await kill(victim)
      await waitForTraffic(running.result, running.result.received + 500)
    } finally {
      release()
      await holding
      await sql.end()
    }
    await expectExact(before, await running.stop())
  })

  test('Redis stopped: 503 limiter_unavailable at once and /health 503; Redis back: served again, no restart; nothing lost', async () => {
    const before = await usageTotals(live()[0]!.url)
    await cluster.redis.stop()
    try {
      for (const instance of live()) {
        const response = await chat(instance.url, key)
        expect(response.status).toBe(503)
        expect(((await response.json()) as { error: { type: string; code: string } }).error).toMatchObject({
          type: 'overloaded_error',
          code: 'limiter_unavailable',
        })
        expect(response.headers.get('retry-after')).toBe('1')
        const health = await fetch(`${instance.url}/health`)
        expect(health.status).toBe(503)
        expect(((await health.json()) as { ok: boolean; limiter: string }).limiter).toStartWith('unavailable')
      }
    } finally {
      await cluster.redis.start()
    }
    for (const instance of live()) {
      await waitFor(async () => (await chat(instance.url, key, 'back again')).status === 200, 'service to resume once Redis is back')
      expect((await fetch(`${instance.url}/health`)).status).toBe(200)
    }
    const after = await usageTotals(live()[0]!.url)
    expect(after.requests - before.requests).toBeGreaterThanOrEqual(live().length)
  })

  test('Postgres stopped: known keys are still served, usage waits in Redis and is folded when Postgres returns', async () => {
    const before = await usageTotals(live()[0]!.url)
    await cluster.postgres.stop()
    let served = 0
    let tokens = 0
    try {
      for (let i = 0; i < 30; i++) {
        const instance = live()[i % live().length]!
        const content = `while postgres is away ${i}`
        const response = await chat(instance.url, key, content).catch((error: Error) => {
          // It happened in CI (an exception in the Postgres driver, since patched: test/regressions/postgres-write-after-close-ends-the-process.test.ts); if an instance goes away again, say which, how, and what it last wrote.
          throw new Error(
            `${error.message} from ${instance.url}, exit ${instance.proc.exitCode ?? instance.proc.signalCode}; its output:\n${instance.output().slice(-4000)}`,
          )
        })
        expect(response.status).toBe(200)
        await response.json()
        served++
        tokens += words(content)
      }
      const health = await fetch(`${live()[0]!.url}/health`)
      expect(health.status).toBe(200)
      expect(((await health.json()) as { database: string }).database).toStartWith('unavailable')
      // What needs the database gets a 503 that says so, never a 500: reading usage, a key this
      // instance has not seen (it may have been made elsewhere), the admin API.
      const usage = await fetch(`${live()[0]!.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })
      const unknown = await chat(live()[1]!.url, `sk-cg-${'u'.repeat(40)}`)
      const keys = await adminFetch(live()[0]!.url, '/admin/keys')
      for (const refused of [usage, unknown, keys]) {
        expect(refused.status).toBe(503)
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('database_unavailable')
      }
    } finally {
      await cluster.postgres.start()
    }
    const after = await waitFor(() => usageTotals(live()[0]!.url).catch(() => null), 'usage to be readable once Postgres is back')
    expect(after.requests - before.requests).toBe(served)
    expect(after.prompt_tokens - before.prompt_tokens).toBe(tokens)
  })
})

describeWithServers('settles that wait for Redis', ['redis', 'postgres'], () => {
  test('answered while Redis was away: the responses go out, the settles wait in the local journal, and land once, even after a SIGKILL, through the next process on that data directory', async () => {
    const upstream = heldUpstream()
    const cluster = await startCluster(`${CONFIG}
[upstreams.held]
kind = "openai"
base_url = "${upstream.url}"
max_retries = 0

[aliases."held/model"]
targets = [{ upstream = "held", model = "m" }]
`)
    try {
      const [first] = (await cluster.start(1)) as [GatewayProcess]
      const { key } = await createKey(first.url, { name: 'waits', tier: 'pro' })
      const before = await usageTotals(first.url)
      // Admitted while Redis is up, held at the upstream, answered after Redis went away.
      const answers = Promise.all(Array.from({ length: 6 }, (_, i) => chat(first.url, key, `held ${i}`, 'held/model')))
      await waitFor(() => upstream.held === 6, 'six requests held at the upstream')
      await cluster.redis.stop()
      upstream.release()
      const responses = await answers
      expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200])
      // Each settle is in the instance's journal before its response went out.
      const journal = join(cluster.dir, 'data')
      const kept = () =>
        readdirSync(journal)
          .filter((name) => name.startsWith('chatgate-settles.usage-'))
          .flatMap((name) => readFileSync(join(journal, name), 'utf8').split('\n').filter(Boolean))
      expect(kept()).toHaveLength(6)
      await first.stop('SIGKILL')
      await cluster.redis.start()
      const [next] = (await cluster.start(1)) as [GatewayProcess]
      const after = await waitFor(async () => {
        const totals = await usageTotals(next.url)
        return totals.requests - before.requests === 6 && totals
      }, 'the six kept settles to be counted')
      expect(after.prompt_tokens - before.prompt_tokens).toBe(6)
      expect(kept()).toHaveLength(0)
      // Counted once: nothing more arrives.
      expect((await chat(next.url, key)).status).toBe(200)
      expect((await usageTotals(next.url)).requests - before.requests).toBe(7)
    } finally {
      upstream.release()
      await cluster.dispose()
      upstream.stop()
    }
  })
})

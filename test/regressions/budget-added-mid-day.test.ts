import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { ADMIN_KEY, adminFetch, type Cluster, createKey, startCluster } from '../support/cluster'
import { tempDir, writeConfig } from '../support/gateway'
import { SETUP_MS, TEARDOWN_MS, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { describeWithServers } from '../support/servers'
import { waitFor } from '../support/wait'

/**
 * Regression (issue 23, point 4): a budget PATCHed onto a key mid-day ignored what the key had
 * spent and not yet folded into the database. The in-memory limiter counted a key's day and month
 * only while a limit used them, and a limit that appeared later started from the database, which
 * lacks the last second of usage (folded every second). A key that spent 1.5 requests' worth and
 * then got a daily budget of 1.5 requests was served twice more. Now every key's periods are
 * counted from its first request on, so a budget or quota added later (PATCH, or a tier's in a
 * config reload) starts from what was spent: refused at once.
 *
 * On SQLite the folds are held for the whole test (a trigger makes them fail, as a busy database
 * would), so everything spent is still only in the journal: exactly the case that was lost.
 */
setDefaultTimeout(TEST_MS)

/** Each token costs $0.001: a chat of "a b c" (3 words in, 3 echoed) costs $0.006. */
const REQUEST_USD = 0.006

const config = (laterBudget: string) => `
[tiers.open]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 100

[tiers.later]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 100
${laterBudget}

[upstreams.local]
kind = "mock"

[prices.echo]
input = 1000
output = 1000

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
`

const chat = (url: string, key: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'a b c' }] }),
  })

async function refusal(response: Response): Promise<string | null> {
  const body = (await response.json()) as { error?: { code: string } }
  if (response.status === 200) return null
  expect(response.status).toBe(429)
  expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  return body.error!.code
}

interface Setup {
  /** The instance that makes the change, and serves the request right after it. */
  url(): string
  /** Every instance, used in turn for the spending. */
  urls(): string[]
  /** Rewrites the config file and reloads it through `url()`. */
  reload(toml: string): Promise<void>
}

function checks(setup: Setup) {
  const spend = async (key: string, requests: number) => {
    for (let i = 0; i < requests; i++) expect((await chat(setup.urls()[i % setup.urls().length]!, key)).status).toBe(200)
  }
  const patched = async (id: string, body: Record<string, unknown>) => {
    const response = await adminFetch(setup.url(), `/admin/keys/${id}`, { method: 'PATCH', body })
    expect(response.status).toBe(200)
  }

  test('a daily budget PATCHed below what the key spent today refuses at once', async () => {
    const { key, id } = await createKey(setup.url(), { name: 'budget-later', tier: 'open' })
    await spend(key, 2)
    await patched(id, { daily_budget_usd: 1.5 * REQUEST_USD })
    expect(await refusal(await chat(setup.url(), key))).toBe('budget_exceeded')
  })

  test('a monthly budget PATCHed the same way refuses at once', async () => {
    const { key, id } = await createKey(setup.url(), { name: 'month-budget-later', tier: 'open' })
    await spend(key, 2)
    await patched(id, { monthly_budget_usd: 1.5 * REQUEST_USD })
    expect(await refusal(await chat(setup.url(), key))).toBe('budget_exceeded')
  })

  test('a monthly token quota and a daily request quota PATCHed at what was used refuse at once', async () => {
    const tokens = await createKey(setup.url(), { name: 'tokens-later', tier: 'open' })
    await spend(tokens.key, 2)
    await patched(tokens.id, { monthly_token_quota: 12 })
    expect(await refusal(await chat(setup.url(), tokens.key))).toBe('quota_exceeded')

    const requests = await createKey(setup.url(), { name: 'requests-later', tier: 'open' })
    await spend(requests.key, 2)
    await patched(requests.id, { daily_request_quota: 2 })
    expect(await refusal(await chat(setup.url(), requests.key))).toBe('quota_exceeded')
  })

  test("a tier's daily budget added by a config reload refuses at once", async () => {
    const { key } = await createKey(setup.url(), { name: 'tier-later', tier: 'later' })
    await spend(key, 2)
    await setup.reload(config(`daily_budget_usd = ${1.5 * REQUEST_USD}`))
    expect(await refusal(await chat(setup.url(), key))).toBe('budget_exceeded')
  })
}

describe('limits added mid-period, one process on SQLite (usage not folded yet)', () => {
  const dir = tempDir()
  const dbPath = `${dir.path}/gateway.sqlite`
  const configPath = writeConfig(dir.path, config(''))
  let gw: GatewayProcess
  let db: Database
  beforeAll(async () => {
    gw = await spawnGateway({ GATEWAY_DB: dbPath, GATEWAY_CONFIG: configPath, GATEWAY_ADMIN_KEY: ADMIN_KEY })
    db = new Database(dbPath)
    db.run('PRAGMA busy_timeout = 5000')
    // A fold writes its journal's fold point in the same transaction as the counters: refusing
    // that write makes every fold fail and change nothing, so the usage stays in the journal.
    for (const event of ['INSERT', 'UPDATE']) {
      db.run(`CREATE TRIGGER hold_folds_${event.toLowerCase()} BEFORE ${event} ON usage_journals BEGIN SELECT RAISE(ABORT, 'folds held by the test'); END`)
    }
  }, SETUP_MS)
  afterAll(async () => {
    await gw?.stop()
    db?.close()
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  checks({
    url: () => gw.url,
    urls: () => [gw.url],
    reload: async (toml) => {
      writeFileSync(configPath, toml)
      expect((await adminFetch(gw.url, '/admin/reload', { method: 'POST' })).status).toBe(200)
    },
  })

  test('the folds were held throughout, and once let go every request is counted', async () => {
    expect(db.query<{ n: number }, []>('SELECT count(*) AS n FROM usage_daily').get()!.n).toBe(0)
    db.run('DROP TRIGGER hold_folds_insert')
    db.run('DROP TRIGGER hold_folds_update')
    await waitFor(() => db.query<{ n: number }, []>('SELECT coalesce(sum(requests), 0) AS n FROM usage_daily').get()!.n === 10, 'the 10 requests to be folded')
  })
})

describeWithServers('limits added mid-period, 3 instances on Redis and Postgres', ['redis', 'postgres'], () => {
  let cluster: Cluster
  let instances: GatewayProcess[]
  beforeAll(async () => {
    cluster = await startCluster(config(''))
    instances = await cluster.start(3)
  }, SETUP_MS)
  afterAll(async () => {
    await cluster?.dispose()
  }, TEARDOWN_MS)

  checks({
    url: () => instances[0]!.url,
    urls: () => instances.map((instance) => instance.url),
    reload: async (toml) => {
      writeFileSync(cluster.configPath, toml)
      expect((await adminFetch(instances[0]!.url, '/admin/reload', { method: 'POST' })).status).toBe(200)
    },
  })
})

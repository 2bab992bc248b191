import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { configDifferences, describeDifference } from '../../src/config/drift'
import { parseGatewayConfig } from '../../src/config/load'
import { providerKinds } from '../../src/providers'
import { ADMIN_KEY, type Cluster, startCluster } from '../support/cluster'
import { tempDir, writeConfig } from '../support/gateway'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { describeWithServers } from '../support/servers'
import { waitFor } from '../support/wait'
import { SETUP_MS, setup, teardown, TEARDOWN_MS, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

// Issue 23, point 7: one of two instances restarted with a different config file replaced the
// config every instance serves (an alias gone, a limit changed) and nothing said so. Now the config
// in force, its version and hash, and each instance's own file hash are in /health and
// GET /admin/config, and the instance whose file differs logs a warning naming the entries.

const configText = (rpm: number, withFast: boolean) => `
[tiers.free]
requests_per_minute = ${rpm}
tokens_per_minute = 20000
max_concurrent = 4

[upstreams.local]
kind = "mock"

[upstreams.openai]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "OPENAI_API_KEY"

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
${withFast ? '\n[aliases."openai/fast"]\ntargets = [{ upstream = "openai", model = "gpt-4o-mini" }]\n' : ''}`

const FIRST = configText(20, true)
const SECOND = configText(30, false)
const sha256 = (text: string) => new Bun.CryptoHasher('sha256').update(text).digest('hex')

interface HealthConfig {
  version: number
  hash: string | null
  file_hash: string
  in_sync: boolean
  differences: number
}
interface Difference {
  entry: string
  change: string
  from?: unknown
  to?: unknown
  text: string
}
interface ConfigStatus {
  in_force: { version: number; hash: string | null; source: string; written_at: string | null }
  file: { source: string; hash: string }
  in_sync: boolean
  differences: Difference[]
  rule: string
}

const healthConfig = async (url: string) => ((await (await fetch(`${url}/health`)).json()) as { config: HealthConfig }).config
const adminConfig = async (url: string) => {
  const response = await fetch(`${url}/admin/config`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
  expect(response.status).toBe(200)
  return (await response.json()) as ConfigStatus
}

/** A started with FIRST, then B started with SECOND on the same database: A must say it drifted. */
async function expectDriftSeen(a: GatewayProcess, b: GatewayProcess): Promise<void> {
  const written = await healthConfig(b.url)
  expect(written).toMatchObject({ hash: sha256(SECOND), file_hash: sha256(SECOND), in_sync: true, differences: 0 })
  const seen = await waitFor(
    async () => {
      const health = await healthConfig(a.url)
      return health.version === written.version && health
    },
    () => `instance A to follow config version ${written.version}; its output:\n${a.output()}`,
  )
  expect(seen).toEqual({ version: written.version, hash: sha256(SECOND), file_hash: sha256(FIRST), in_sync: false, differences: 2 })

  const status = await adminConfig(a.url)
  expect(status.in_force).toMatchObject({ version: written.version, hash: sha256(SECOND) })
  expect(status.file.hash).toBe(sha256(FIRST))
  expect(status.in_sync).toBe(false)
  expect(status.rule).toContain('last instance to start or reload')
  expect(status.differences).toEqual([
    { entry: 'tiers.free.requests_per_minute', change: 'changed', from: 20, to: 30, text: 'tiers.free.requests_per_minute 20 → 30' },
    { entry: 'aliases."openai/fast"', change: 'removed', from: expect.anything(), text: 'aliases."openai/fast" removed' },
  ])
  // The instance that wrote it is in step, and says what its start replaced.
  expect((await adminConfig(b.url)).in_sync).toBe(true)
  await waitFor(
    () => /differs from the config in force/.test(a.output()) && a.output(),
    () => `A's warning; its output:\n${a.output()}`,
  )
  const warning = a
    .output()
    .split('\n')
    .find((line) => line.includes('differs from the config in force'))!
  expect(JSON.parse(warning)).toMatchObject({ level: expect.stringMatching(/warn/) })
  expect(warning).toContain('aliases.\\"openai/fast\\" removed')
  expect(warning).toContain('tiers.free.requests_per_minute 20 → 30')
  expect(b.output()).toContain('as the config in force, replacing version')
}

describe('config drift between two processes on one SQLite file', () => {
  const dir = tempDir()
  const first = writeConfig(dir.path, FIRST, 'first.toml')
  const second = writeConfig(dir.path, SECOND, 'second.toml')
  const env = (config: string) => ({ GATEWAY_DB: join(dir.path, 'gateway.sqlite'), GATEWAY_CONFIG: config, GATEWAY_ADMIN_KEY: ADMIN_KEY })
  let a: GatewayProcess
  let b: GatewayProcess

  setup(async () => {
    a = await spawnGateway(env(first))
  }, SETUP_MS)
  teardown(async () => {
    await Promise.all([a?.stop(), b?.stop()])
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  test('alone, an instance serves its own file: /health and /admin/config say so, and the OpenAPI document lists /admin/config', async () => {
    expect(await healthConfig(a.url)).toMatchObject({ hash: sha256(FIRST), file_hash: sha256(FIRST), in_sync: true, differences: 0 })
    const status = await adminConfig(a.url)
    expect(status).toMatchObject({
      in_force: { hash: sha256(FIRST), source: first },
      file: { hash: sha256(FIRST), source: first },
      in_sync: true,
      differences: [],
    })
    expect(Date.parse(status.in_force.written_at!)).not.toBeNaN()
    const openapi = (await (await fetch(`${a.url}/swagger/json`)).json()) as { paths: Record<string, { get?: unknown }> }
    expect(openapi.paths['/admin/config']?.get).toBeDefined()
    expect((await fetch(`${a.url}/admin/config`)).status).toBe(401)
  })

  test('a second process with another file replaces the config; the first reports the drift by entry, and is in step again once the files agree', async () => {
    b = await spawnGateway(env(second))
    await expectDriftSeen(a, b)
    // B now reloads the first file: the files agree again, and A says so.
    writeFileSync(second, FIRST)
    const reload = await fetch(`${b.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}` } })
    expect(reload.status).toBe(200)
    expect(((await reload.json()) as { hash: string }).hash).toBe(sha256(FIRST))
    await waitFor(async () => (await healthConfig(a.url)).in_sync, 'A back in step')
    expect(await adminConfig(a.url)).toMatchObject({ in_sync: true, differences: [], in_force: { hash: sha256(FIRST) } })
  })
})

describeWithServers('config drift between two instances on Postgres and Redis', ['redis', 'postgres'], () => {
  let cluster: Cluster
  let a: GatewayProcess
  let b: GatewayProcess

  setup(async () => {
    cluster = await startCluster(FIRST)
    ;[a] = (await cluster.start(1)) as [GatewayProcess]
  }, SETUP_MS)
  teardown(async () => {
    await b?.stop()
    await cluster?.dispose()
  }, TEARDOWN_MS)

  test('an instance started with another file replaces the cluster config; the other one reports the drift by entry', async () => {
    const second = writeConfig(cluster.dir, SECOND, 'second.toml')
    b = await spawnGateway(cluster.env({ GATEWAY_CONFIG: second }))
    await expectDriftSeen(a, b)
  })
})

describe('the differences, named as the file names them', () => {
  const parse = (raw: unknown) => parseGatewayConfig(raw, 'test.toml', providerKinds)
  const tier = (rpm: number, budget?: number) => ({
    requests_per_minute: rpm,
    tokens_per_minute: 10,
    max_concurrent: 1,
    ...(budget ? { daily_budget_usd: budget } : {}),
  })
  const base = {
    tiers: { free: tier(20, 0.03), pro: tier(100) },
    upstreams: { up: { kind: 'openai', base_url: 'http://127.0.0.1:9/v1', timeout_ms: 1000 } },
    prices: { m: { input: 1, output: 2 } },
    aliases: { 'a/b': { targets: [{ upstream: 'up', model: 'm' }] } },
  }

  test('budgets in USD, prices per million tokens, targets by index, tier order, settings; nothing when only the text differs', () => {
    const other = parse({
      ...base,
      tiers: { pro: tier(100), free: tier(20, 0.05) },
      upstreams: { up: { kind: 'openai', base_url: 'http://127.0.0.1:9/v1', timeout_ms: 2000 } },
      prices: { m: { input: 1.5, output: 2 } },
      aliases: {
        'a/b': {
          targets: [
            { upstream: 'up', model: 'm' },
            { upstream: 'up', model: 'n', weight: 2 },
          ],
        },
      },
      routing: { deadline_ms: 5000 },
    })
    expect(configDifferences(parse(base), other).map(describeDifference)).toEqual([
      'tiers.free.daily_budget_usd 0.03 → 0.05',
      'upstreams.up.timeout_ms 1000 → 2000',
      'aliases."a/b".targets[0].price.input 1 → 1.5',
      'aliases."a/b".targets[0].price.cached_input 1 → 1.5',
      'aliases."a/b".targets[0].price.cache_write 1 → 1.5',
      'aliases."a/b".targets[1] added',
      'routing.deadline_ms 120000 → 5000',
      'tiers (order) ["free","pro"] → ["pro","free"]',
    ])
    // Same settings, other bytes: another hash, no difference.
    const same = parseGatewayConfig(base, 'test.toml', providerKinds, `# a comment\n${JSON.stringify(base)}`)
    expect(same.hash).not.toBe(parse(base).hash)
    expect(configDifferences(parse(base), same)).toEqual([])
  })
})

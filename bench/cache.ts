/**
 * Cache hits: a gateway whose bench alias has an exact response cache, asked the same request over
 * and over, so every request after the first is a hit (JSON, and a stream made from the cached
 * answer). Goal: a hit is faster than the bare proxy's round trip to the mock, in both forms, for one
 * caller (c1: its latency) and for 32 (c32: the throughput of one gateway process against the bare
 * proxy's and the mock's two).
 *
 *   bun bench/cache.ts [--runs 3] [--duration 10]      # the scenario alone, on its own mock and bare proxy (needs wrk)
 *
 * For `bun run bench`: `startCacheTarget(configPath, env, alias)` starts the gateway (its own
 * database and key; `alias` gains `cache = { ttl_s = 86400, scope = "alias" }`) and gives its
 * target; `describeCache(summary)` gives the report's lines and checks against the bare proxy.
 */
import { temporaryBuild } from '../scripts/build'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { aloneOptions, measureAlone, printReport, startAloneMock, type Summary } from './alone'
import { freePort, ROOT, start, waitForHealthy } from './processes'

/** The row this scenario adds, and the row it is compared with (run.ts's names). */
export const CACHE_HIT = 'cache hit'
const BARE = 'bare proxy'
const GATEWAY = 'chatgate'
/** The scenarios it runs in. */
export const CACHE_SCENARIOS = ['json c1', 'stream c1', 'json c32', 'stream c32']

export interface CacheTarget {
  name: string
  url: string
  headers: Record<string, string>
  model: string
  pid: number
  scenarios: string[]
}

/** `configPath` (TOML) as JSON with a cache on `alias`: every caller's repeat of a request is a hit. */
function cachedConfig(configPath: string, alias: string, dir: string): string {
  const config = Bun.TOML.parse(readFileSync(configPath, 'utf8')) as { aliases: Record<string, Record<string, unknown>> }
  const settings = config.aliases[alias]
  if (!settings) throw new Error(`the bench config has no alias "${alias}"`)
  settings.cache = { ttl_s: 86_400, scope: 'alias' }
  const path = join(dir, 'gateway-cache.json')
  writeFileSync(path, JSON.stringify(config))
  return path
}

/** Starts the cached gateway on `configPath` (its tier `bench`), `alias` being the model it is asked for. */
export async function startCacheTarget(
  configPath: string,
  env: Record<string, string>,
  alias: string,
): Promise<{ target: CacheTarget; dispose(): Promise<void> }> {
  const work = mkdtempSync(join(tmpdir(), 'chatgate-bench-cache-'))
  const gatewayEnv = { ...env, GATEWAY_CONFIG: cachedConfig(configPath, alias, work), GATEWAY_DB: join(work, 'gateway.sqlite') }
  const created = Bun.spawnSync(['bun', temporaryBuild('cli'), 'keys', 'create', '--name', 'bench', '--tier', 'bench', '--json'], {
    cwd: ROOT,
    env: { ...process.env, ...gatewayEnv },
  })
  const key = (JSON.parse(created.stdout.toString()) as { key: string }).key
  const port = await freePort()
  const child = start(['bun', temporaryBuild('main')], { ...gatewayEnv, PORT: String(port) })
  await waitForHealthy(`http://127.0.0.1:${port}/health`)
  return {
    target: {
      name: CACHE_HIT,
      url: `http://127.0.0.1:${port}`,
      headers: { Authorization: `Bearer ${key}` },
      model: alias,
      pid: child.pid,
      scenarios: CACHE_SCENARIOS,
    },
    async dispose() {
      child.kill('SIGTERM')
      await child.exited
      rmSync(work, { recursive: true, force: true })
    },
  }
}

/** The report's lines (hits over the bare proxy, per scenario) and the checks: hits faster than the bare proxy. */
export function describeCache(summary: Summary): { lines: string[]; checks: [string, boolean][] } {
  const lines: string[] = []
  const checks: [string, boolean][] = []
  for (const scenario of CACHE_SCENARIOS) {
    const hit = summary[scenario]?.[CACHE_HIT]
    const bare = summary[scenario]?.[BARE]
    if (!hit || !bare) continue
    const ratio = hit.rps / bare.rps
    lines.push(
      `cache ${scenario}: hits ${hit.rps.toFixed(0)} req/s (p50 ${hit.p50.toFixed(3)} ms, p99 ${hit.p99.toFixed(3)} ms), bare proxy ${bare.rps.toFixed(0)} req/s (p50 ${bare.p50.toFixed(3)} ms): ${ratio.toFixed(2)} x`,
    )
    checks.push([`cache hits ${scenario} req/s > bare proxy`, ratio > 1])
    checks.push([`cache hits ${scenario} p50 < bare proxy`, hit.p50 < bare.p50])
    // Beside the same gateway's proxying (run.ts's row), what a hit spares of a request's cost.
    const proxied = summary[scenario]?.[GATEWAY]
    if (proxied) lines.push(`cache ${scenario}: hits ${(hit.rps / proxied.rps).toFixed(2)} x the gateway's own proxying (${proxied.rps.toFixed(0)} req/s)`)
  }
  return { lines, checks }
}

/** The scenario alone: its own mock and bare proxy, the two taking turns in each run; medians. */
async function main(options: { runs: number; seconds: number }): Promise<void> {
  const mock = await startAloneMock()
  const barePort = await freePort()
  const bareProxy = start(['bun', 'bench/bare-proxy.ts', String(barePort), `http://127.0.0.1:${mock.mockPort}`])
  await waitForHealthy(`http://127.0.0.1:${barePort}/`)
  const cached = await startCacheTarget(mock.configPath, {}, 'bench/fast')
  const targets = [{ name: BARE, url: `http://127.0.0.1:${barePort}`, headers: {}, model: 'bench-model' }, cached.target]
  const { summary } = await measureAlone(targets, CACHE_SCENARIOS, options)
  const { lines, checks } = describeCache(summary)
  printReport(lines, checks)
  await cached.dispose()
  bareProxy.kill('SIGTERM')
  mock.dispose()
}

if (import.meta.main) {
  await main(aloneOptions())
  process.exit(0)
}

/**
 * What `least_latency` costs, and whether it follows the faster target under load: an alias over two
 * targets, the run's fast mock and a second mock 2 ms slower (about ten times the fast one's time to
 * first token on a bench machine), measured beside the plain one-target alias on the fast mock.
 * Goal: at least 0.8 of the one-target alias's throughput (the probes, one request in 20 sent to the
 * slow target, cost their share of its latency), with at least 90 % of the attempts on the fast one.
 *
 *   bun bench/least-latency.ts [--runs 3] [--duration 10]      # the scenario alone, on its own mocks (needs wrk)
 *
 * For `bun run bench`: `startLeastLatencyMock()` starts the slow mock and gives the config's tables
 * (an upstream, and the alias `LEAST_LATENCY_ALIAS` over `[upstreams.mock]` and it); the run measures
 * a target named `LEAST_LATENCY` on that alias in `LEAST_LATENCY_SCENARIOS`; `readAttempts(url)`
 * before and after gives the attempts per upstream from the gateway's /metrics; and
 * `describeLeastLatency(summary, attempts)` gives the report's lines and checks.
 */
import { temporaryBuild } from '../scripts/build'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { aloneOptions, measureAlone, printReport, startAloneMock, type Summary } from './alone'
import { freePort, ROOT, start, waitForHealthy } from './processes'

/** The row this scenario adds, the alias it asks for, and the scenarios it runs in (run.ts's names). */
export const LEAST_LATENCY = 'least_latency'
export const LEAST_LATENCY_ALIAS = 'bench/least-latency'
export const LEAST_LATENCY_SCENARIOS = ['json c32', 'stream c32']
/** The one-target row it is compared with (run.ts's name for the gateway on `bench/fast`). */
const BASELINE = 'chatgate'
/** How much slower the second mock is, in ms: about ten times the fast mock's time to first token. */
const SLOW_DELAY_MS = 2
const GOAL_THROUGHPUT = 0.8
const GOAL_FAST_SHARE = 0.9

export interface LeastLatencyMock {
  /** The config's tables: the slow upstream, and the alias over `[upstreams.mock]` and it. */
  toml: string
  dispose(): void
}

/** Starts the slow mock (bench/mock-upstream.ts with a delay). The run's config must have `[upstreams.mock]` on the fast one. */
export async function startLeastLatencyMock(): Promise<LeastLatencyMock> {
  const port = await freePort()
  const child = start(['bun', 'bench/mock-upstream.ts', String(port), String(SLOW_DELAY_MS)])
  await waitForHealthy(`http://127.0.0.1:${port}/`)
  return {
    toml: `
[upstreams.mock_slow]
kind = "openai"
base_url = "http://127.0.0.1:${port}/v1"

[aliases."${LEAST_LATENCY_ALIAS}"]
strategy = "least_latency"
targets = [{ upstream = "mock_slow", model = "bench-model" }, { upstream = "mock", model = "bench-model" }]
`,
    dispose: () => child.kill('SIGTERM'),
  }
}

/** Successful attempts per upstream so far, from the gateway's /metrics (chatgate_upstream_attempts_total). */
export async function readAttempts(gatewayUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${gatewayUrl}/metrics`)).text()
  const attempts: Record<string, number> = {}
  for (const match of text.matchAll(/^chatgate_upstream_attempts_total\{upstream="([^"]+)",outcome="success"\} (\d+)/gm)) {
    attempts[match[1]!] = Number(match[2])
  }
  return attempts
}

/**
 * The report's lines and checks: the two-target alias over the one-target one, per scenario, and the
 * share of its attempts that went to the fast target (`attempts`: successful attempts per upstream
 * during the scenario's runs, the difference of two `readAttempts`).
 */
export function describeLeastLatency(summary: Summary, attempts: Record<string, number>): { lines: string[]; checks: [string, boolean][] } {
  const lines: string[] = []
  const checks: [string, boolean][] = []
  for (const scenario of LEAST_LATENCY_SCENARIOS) {
    const two = summary[scenario]?.[LEAST_LATENCY]
    const one = summary[scenario]?.[BASELINE]
    if (!two || !one) continue
    const ratio = two.rps / one.rps
    lines.push(
      `least_latency ${scenario}: two targets ${two.rps.toFixed(0)} req/s (p50 ${two.p50.toFixed(3)} ms, p99 ${two.p99.toFixed(3)} ms), one target ${one.rps.toFixed(0)} req/s (p50 ${one.p50.toFixed(3)} ms, p99 ${one.p99.toFixed(3)} ms): ${ratio.toFixed(3)} x`,
    )
    checks.push([`least_latency ${scenario} req/s >= ${GOAL_THROUGHPUT} x one target`, ratio >= GOAL_THROUGHPUT])
  }
  const fast = attempts.mock ?? 0
  const slow = attempts.mock_slow ?? 0
  const share = fast + slow === 0 ? 0 : fast / (fast + slow)
  lines.push(`least_latency: ${fast} attempts on the fast target, ${slow} on the one ${SLOW_DELAY_MS} ms slower (${(share * 100).toFixed(1)} % fast)`)
  checks.push([`least_latency sends >= ${GOAL_FAST_SHARE * 100} % of its attempts to the fast target`, share >= GOAL_FAST_SHARE])
  return { lines, checks }
}

/** The scenario alone: its own mocks and gateway, the two aliases taking turns in each run; medians. */
async function main(options: { runs: number; seconds: number }): Promise<void> {
  const slow = await startLeastLatencyMock()
  const mock = await startAloneMock(slow.toml)
  const work = mkdtempSync(join(tmpdir(), 'chatgate-bench-least-latency-'))
  const env = { GATEWAY_CONFIG: mock.configPath, GATEWAY_DB: join(work, 'gateway.sqlite') }
  const created = Bun.spawnSync(['bun', temporaryBuild('cli'), 'keys', 'create', '--name', 'bench', '--tier', 'bench', '--json'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  })
  const headers = { Authorization: `Bearer ${(JSON.parse(created.stdout.toString()) as { key: string }).key}` }
  const port = await freePort()
  const gateway = start(['bun', temporaryBuild('main')], { ...env, PORT: String(port) })
  const url = `http://127.0.0.1:${port}`
  await waitForHealthy(`${url}/health`)
  const targets = [
    { name: BASELINE, url, headers, model: 'bench/fast' },
    { name: LEAST_LATENCY, url, headers, model: LEAST_LATENCY_ALIAS },
  ]
  const attempts: Record<string, number> = {}
  const { summary } = await measureAlone(targets, LEAST_LATENCY_SCENARIOS, {
    ...options,
    // The attempts per upstream while the least_latency row runs.
    async around(target, measure) {
      if (target.name !== LEAST_LATENCY) return measure()
      const before = await readAttempts(url)
      const result = await measure()
      for (const [upstream, n] of Object.entries(await readAttempts(url))) attempts[upstream] = (attempts[upstream] ?? 0) + n - (before[upstream] ?? 0)
      return result
    },
  })
  const { lines, checks } = describeLeastLatency(summary, attempts)
  printReport(lines, checks)
  gateway.kill('SIGTERM')
  await gateway.exited
  slow.dispose()
  mock.dispose()
  rmSync(work, { recursive: true, force: true })
}

if (import.meta.main) {
  await main(aloneOptions())
  process.exit(0)
}

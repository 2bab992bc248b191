/**
 * What the request log costs: three fresh gateway processes on the same config and upstream, with
 * the log off (`[request_log] enabled = false`), on with bodies off (the default), and on with
 * bodies "all" (every request and answer kept, redacted and cut), measured in the same scenarios so
 * their throughputs compare. Goal: each costs at most 5 % of the throughput with the log off.
 *
 *   bun bench/request-log.ts [--runs 3] [--duration 10]   # the scenario alone, on its own mock (needs wrk)
 *
 * For `bun run bench`: `startRequestLogTargets(configPath, env, alias)` starts the three gateways
 * (each on its own database, with its own key) and gives their targets; `describeRequestLog(summary)`
 * gives the report's lines and checks.
 */
import { temporaryBuild } from '../scripts/build'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { aloneOptions, measureAlone, printReport, startAloneMock, type Summary } from './alone'
import { freePort, ROOT, start, waitForHealthy } from './processes'

/** The rows this scenario adds. */
export const LOG_OFF = 'log off'
export const LOG_ON = 'log on'
export const LOG_BODIES = 'log bodies'
/** The scenarios they run in (run.ts's names). */
export const REQUEST_LOG_SCENARIOS = ['json c32', 'stream c32']
/** The log on may cost this much of the throughput with it off, at most. */
const GOAL = 0.05

/** Each row's `[request_log]` section, appended to the bench's config. */
const SETTINGS: [string, string][] = [
  [LOG_OFF, 'enabled = false'],
  [LOG_ON, 'bodies = "off"'],
  [LOG_BODIES, 'bodies = "all"'],
]

export interface RequestLogTarget {
  name: string
  url: string
  headers: Record<string, string>
  model: string
  pid: number
  scenarios: string[]
}

export interface RequestLogTargets {
  targets: RequestLogTarget[]
  dispose(): Promise<void>
}

/** Starts the three gateways on `configPath` (its tier `bench`, no `[request_log]` of its own), `alias` being the model they are asked for. */
export async function startRequestLogTargets(configPath: string, env: Record<string, string>, alias: string): Promise<RequestLogTargets> {
  const work = mkdtempSync(join(tmpdir(), 'chatgate-bench-request-log-'))
  const base = readFileSync(configPath, 'utf8')
  const started = await Promise.all(
    SETTINGS.map(async ([name, setting], i) => {
      const config = join(work, `gateway-${i}.toml`)
      writeFileSync(config, `${base}\n[request_log]\n${setting}\n`)
      const gatewayEnv = { ...env, GATEWAY_CONFIG: config, GATEWAY_DB: join(work, `gateway-${i}.sqlite`) }
      const created = Bun.spawnSync(['bun', temporaryBuild('cli'), 'keys', 'create', '--name', 'bench', '--tier', 'bench', '--json'], {
        cwd: ROOT,
        env: { ...process.env, ...gatewayEnv },
      })
      const key = (JSON.parse(created.stdout.toString()) as { key: string }).key
      const port = await freePort()
      const child = start(['bun', temporaryBuild('main')], { ...gatewayEnv, PORT: String(port) })
      await waitForHealthy(`http://127.0.0.1:${port}/health`)
      const target: RequestLogTarget = {
        name,
        url: `http://127.0.0.1:${port}`,
        headers: { Authorization: `Bearer ${key}` },
        model: alias,
        pid: child.pid,
        scenarios: REQUEST_LOG_SCENARIOS,
      }
      return { target, child }
    }),
  )
  return {
    targets: started.map(({ target }) => target),
    async dispose() {
      for (const { child } of started) child.kill('SIGTERM')
      await Promise.all(started.map(({ child }) => child.exited))
      rmSync(work, { recursive: true, force: true })
    },
  }
}

/** The report's lines (each row over the log off, per scenario) and the checks against the goal. */
export function describeRequestLog(summary: Summary): { lines: string[]; checks: [string, boolean][] } {
  const lines: string[] = []
  const checks: [string, boolean][] = []
  for (const scenario of REQUEST_LOG_SCENARIOS) {
    const off = summary[scenario]?.[LOG_OFF]
    if (!off) continue
    for (const name of [LOG_ON, LOG_BODIES]) {
      const on = summary[scenario]?.[name]
      if (!on) continue
      const ratio = on.rps / off.rps
      lines.push(
        `request ${name} ${scenario}: ${on.rps.toFixed(0)} req/s (p50 ${on.p50.toFixed(3)} ms, p99 ${on.p99.toFixed(3)} ms), off ${off.rps.toFixed(0)} req/s (p50 ${off.p50.toFixed(3)} ms, p99 ${off.p99.toFixed(3)} ms): ${ratio.toFixed(3)} x`,
      )
      checks.push([`request ${name} ${scenario} req/s >= ${1 - GOAL} x request log off`, ratio >= 1 - GOAL])
    }
  }
  return { lines, checks }
}

/** The scenario alone: its own mock, the three gateways taking turns in each run; medians. */
async function main(options: { runs: number; seconds: number }): Promise<void> {
  const mock = await startAloneMock()
  const trio = await startRequestLogTargets(mock.configPath, {}, 'bench/fast')
  const { summary, cpuUs } = await measureAlone(trio.targets, REQUEST_LOG_SCENARIOS, options)
  const { lines, checks } = describeRequestLog(summary)
  for (const scenario of REQUEST_LOG_SCENARIOS) {
    const cpu = (name: string) => cpuUs(scenario, name)?.toFixed(0)
    lines.push(`request log ${scenario}: gateway CPU per request, off ${cpu(LOG_OFF)} µs, on ${cpu(LOG_ON)} µs, bodies ${cpu(LOG_BODIES)} µs`)
  }
  printReport(lines, checks)
  await trio.dispose()
  mock.dispose()
}

if (import.meta.main) {
  await main(aloneOptions())
  process.exit(0)
}

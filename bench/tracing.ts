/**
 * What tracing costs: two fresh gateway processes on the same config and upstream, one with tracing
 * off and one with it on (OTLP/HTTP protobuf, 100 % sampling, batched to a live local receiver that
 * takes every export), measured in the same scenarios so their throughputs compare. Goal: tracing
 * on costs at most 5 % of the throughput with it off.
 *
 *   bun bench/tracing.ts [--runs 3] [--duration 10]      # the scenario alone, on its own mock (needs wrk)
 *
 * For `bun run bench`: `startTracingTargets(configPath, env, alias)` starts both gateways (each on its
 * own database, with its own key) and gives their targets; `describeTracing(summary)` gives the
 * report's lines and checks.
 */
import { temporaryBuild } from '../scripts/build'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { otlpReceiver, type OtlpReceiver } from '../test/observability/receiver'
import { aloneOptions, measureAlone, printReport, startAloneMock, type Summary } from './alone'
import { freePort, ROOT, start, waitForHealthy } from './processes'

/** The rows this scenario adds. */
export const TRACING_OFF = 'tracing off'
export const TRACING_ON = 'tracing on'
/** The scenarios they run in (run.ts's names). */
export const TRACING_SCENARIOS = ['json c32', 'stream c32']
/** Tracing on may cost this much of the throughput with it off, at most. */
const GOAL = 0.05

export interface TracingTarget {
  name: string
  url: string
  headers: Record<string, string>
  model: string
  pid: number
  scenarios: string[]
}

export interface TracingTargets {
  targets: [TracingTarget, TracingTarget]
  receiver: OtlpReceiver
  dispose(): Promise<void>
}

/** The variables of the traced gateway: every request sampled, exported in protobuf to the receiver. */
const tracingEnv = (receiver: OtlpReceiver) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_TRACES_SAMPLER: 'always_on',
  OTEL_SERVICE_NAME: 'chatgate-bench',
})

/** Starts the gateway pair on `configPath` (its tier `bench`), `alias` being the model they are asked for. */
export async function startTracingTargets(configPath: string, env: Record<string, string>, alias: string): Promise<TracingTargets> {
  const work = mkdtempSync(join(tmpdir(), 'chatgate-bench-tracing-'))
  const receiver = otlpReceiver({ kind: 'ok' }, { decode: false })
  const started = await Promise.all(
    [
      { name: TRACING_OFF, extra: {} },
      { name: TRACING_ON, extra: tracingEnv(receiver) },
    ].map(async ({ name, extra }, i) => {
      const gatewayEnv = { ...env, GATEWAY_CONFIG: configPath, GATEWAY_DB: join(work, `gateway-${i}.sqlite`) }
      const created = Bun.spawnSync(['bun', temporaryBuild('cli'), 'keys', 'create', '--name', 'bench', '--tier', 'bench', '--json'], {
        cwd: ROOT,
        env: { ...process.env, ...gatewayEnv },
      })
      const key = (JSON.parse(created.stdout.toString()) as { key: string }).key
      const port = await freePort()
      const child = start(['bun', temporaryBuild('main')], { ...gatewayEnv, ...extra, PORT: String(port) })
      await waitForHealthy(`http://127.0.0.1:${port}/health`)
      const target: TracingTarget = {
        name,
        url: `http://127.0.0.1:${port}`,
        headers: { Authorization: `Bearer ${key}` },
        model: alias,
        pid: child.pid,
        scenarios: TRACING_SCENARIOS,
      }
      return { target, child }
    }),
  )
  return {
    targets: [started[0]!.target, started[1]!.target],
    receiver,
    async dispose() {
      for (const { child } of started) child.kill('SIGTERM')
      await Promise.all(started.map(({ child }) => child.exited))
      receiver.stop()
      rmSync(work, { recursive: true, force: true })
    },
  }
}

/** The report's lines (on over off, per scenario; what the receiver got) and the checks against the goal. */
export function describeTracing(summary: Summary, receiver: OtlpReceiver): { lines: string[]; checks: [string, boolean][] } {
  const lines: string[] = []
  const checks: [string, boolean][] = []
  for (const scenario of TRACING_SCENARIOS) {
    const off = summary[scenario]?.[TRACING_OFF]
    const on = summary[scenario]?.[TRACING_ON]
    if (!off || !on) continue
    const ratio = on.rps / off.rps
    lines.push(
      `tracing ${scenario}: on ${on.rps.toFixed(0)} req/s (p50 ${on.p50.toFixed(3)} ms, p99 ${on.p99.toFixed(3)} ms), off ${off.rps.toFixed(0)} req/s (p50 ${off.p50.toFixed(3)} ms, p99 ${off.p99.toFixed(3)} ms): ${ratio.toFixed(3)} x`,
    )
    checks.push([`tracing on ${scenario} req/s >= ${1 - GOAL} x tracing off`, ratio >= 1 - GOAL])
  }
  lines.push(`tracing: the local OTLP receiver took ${receiver.exports.length} exports, ${(receiver.bytes / 1e6).toFixed(1)} MB`)
  return { lines, checks }
}

/** The scenario alone: its own mock, the pair of gateways, off and on taking turns in each run; medians. */
async function main(options: { runs: number; seconds: number }): Promise<void> {
  const mock = await startAloneMock()
  const pair = await startTracingTargets(mock.configPath, {}, 'bench/fast')
  const { summary, cpuUs } = await measureAlone(pair.targets, TRACING_SCENARIOS, options)
  const { lines, checks } = describeTracing(summary, pair.receiver)
  for (const scenario of TRACING_SCENARIOS)
    lines.push(
      `tracing ${scenario}: gateway CPU per request, on ${cpuUs(scenario, TRACING_ON)?.toFixed(0)} µs, off ${cpuUs(scenario, TRACING_OFF)?.toFixed(0)} µs`,
    )
  printReport(lines, checks)
  await pair.dispose()
  mock.dispose()
}

if (import.meta.main) {
  await main(aloneOptions())
  process.exit(0)
}

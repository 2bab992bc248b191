/**
 * What the side scenarios (tracing, the request log, the cache, least_latency) share when run on
 * their own (`bun bench/<scenario>.ts`): a mock and the bench's config on it, the turns of wrk over
 * their targets, each run's gateway CPU from /proc, the medians, the report and the arguments.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { cpuSeconds, freePort, start, waitForHealthy } from './processes'
import { wrk, type WrkResult } from './wrk'

export type Summary = Record<string, Record<string, { rps: number; p50: number; p99: number }>>

export interface AloneTarget {
  name: string
  url: string
  headers: Record<string, string>
  model: string
  /** The gateway's process, for its CPU per request; none for a bare proxy. */
  pid?: number
}

/** The bench's config on the mock: tier `bench`, whose limits cannot trip, and alias `bench/fast` on upstream `mock`. */
export const benchConfig = (mockPort: number): string => `
[tiers.bench]
requests_per_minute = 100000000
tokens_per_minute = 1000000000000
max_concurrent = 100000

[upstreams.mock]
kind = "openai"
base_url = "http://127.0.0.1:${mockPort}/v1"

[aliases."bench/fast"]
targets = [{ upstream = "mock", model = "bench-model" }]
`

/** The mock, and the bench's config on it (`bench/fast`, tier `bench`) with `extra` tables appended. */
export async function startAloneMock(extra = ''): Promise<{ mockPort: number; configPath: string; dispose(): void }> {
  const work = mkdtempSync(join(tmpdir(), 'chatgate-bench-alone-'))
  const mockPort = await freePort()
  const mock = start(['bun', 'bench/mock-upstream.ts', String(mockPort)])
  await waitForHealthy(`http://127.0.0.1:${mockPort}/`)
  const configPath = join(work, 'gateway.toml')
  writeFileSync(configPath, `${benchConfig(mockPort)}${extra}`)
  return {
    mockPort,
    configPath,
    dispose() {
      mock.kill('SIGTERM')
      rmSync(work, { recursive: true, force: true })
    },
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** A scenario's connections, from its name (`json c1`: one; `stream c32`: 32). */
const connectionsOf = (scenario: string): number => Number(/ c(\d+)$/.exec(scenario)?.[1] ?? 32)

/**
 * Each target in each scenario (`json c1`, `stream c32`...), taking turns, `runs` times: 2 s of warm-up,
 * then `seconds` measured, through `around` when given (to read something before and after). The
 * medians, and each target's median gateway CPU per request in µs (null without a pid).
 */
export async function measureAlone(
  targets: AloneTarget[],
  scenarios: string[],
  options: { runs: number; seconds: number; around?: (target: AloneTarget, measure: () => Promise<WrkResult>) => Promise<WrkResult> },
): Promise<{ summary: Summary; cpuUs(scenario: string, name: string): number | null }> {
  const samples: Record<string, Record<string, (WrkResult & { cpuUs: number | null })[]>> = {}
  for (let run = 1; run <= options.runs; run++) {
    for (const scenario of scenarios) {
      for (const target of targets) {
        const body = JSON.stringify({
          model: target.model,
          messages: [{ role: 'user', content: 'Say something about foxes.' }],
          ...(scenario.startsWith('stream') ? { stream: true } : {}),
        })
        const url = `${target.url}/v1/chat/completions`
        const connections = connectionsOf(scenario)
        await wrk(url, connections, 2, body, target.headers)
        const cpuBefore = target.pid === undefined ? null : cpuSeconds(target.pid)
        const measure = () => wrk(url, connections, options.seconds, body, target.headers)
        const result = await (options.around ? options.around(target, measure) : measure())
        const cpuUs = cpuBefore === null ? null : ((cpuSeconds(target.pid!) - cpuBefore) / result.requests) * 1e6
        ;((samples[scenario] ??= {})[target.name] ??= []).push({ ...result, cpuUs })
        const cpu = cpuUs === null ? '' : `, ${cpuUs.toFixed(0)} µs of gateway CPU per request`
        console.error(
          `run ${run}/${options.runs} ${scenario} ${target.name}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(3)} ms${cpu}, errors ${result.errors}`,
        )
      }
    }
  }
  const summary: Summary = {}
  for (const [scenario, byTarget] of Object.entries(samples))
    for (const [name, results] of Object.entries(byTarget))
      (summary[scenario] ??= {})[name] = {
        rps: median(results.map((r) => r.rps)),
        p50: median(results.map((r) => r.p50)),
        p99: median(results.map((r) => r.p99)),
      }
  return {
    summary,
    cpuUs(scenario, name) {
      const values = samples[scenario]?.[name]?.map((r) => r.cpuUs) ?? []
      return values.length === 0 || values.includes(null) ? null : median(values as number[])
    },
  }
}

/** The report's lines, then each check as PASS or MISS. */
export const printReport = (lines: string[], checks: [string, boolean][]): void =>
  console.log([...lines, ...checks.map(([name, ok]) => `${ok ? 'PASS' : 'MISS'}  ${name}`)].join('\n'))

/** `--runs` (default 3) and `--duration` in seconds (default 10). */
export function aloneOptions(): { runs: number; seconds: number } {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { runs: { type: 'string', default: '3' }, duration: { type: 'string', default: '10' } },
  })
  return { runs: Number(values.runs), seconds: Number(values.duration) }
}

/** wrk runs and what they measured: one URL, or the same load spread over several. */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface WrkResult {
  rps: number
  p50: number
  p99: number
  errors: number
  requests: number
}

const LUA = join(mkdtempSync(join(tmpdir(), 'chatgate-bench-lua-')), 'post.lua')
writeFileSync(
  LUA,
  `wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
wrk.headers["Content-Type"] = "application/json"
local headers = os.getenv("BENCH_HEADERS") or ""
for name, value in string.gmatch(headers, "([^:|]+):([^|]+)") do wrk.headers[name] = value end
`,
)

const ms = (value: string, unit: string) => Number(value) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[unit]!

/** A percentile (ms) from wrk's `--latency` lines (`99%`) or wrk2's (`99.000%`). */
const percentileOf = (out: string, p: string): number => {
  const match = new RegExp(`\\s${p}(?:\\.0+)?%\\s+([\\d.]+)(us|ms|s)`).exec(out)
  return match ? ms(match[1]!, match[2]!) : NaN
}

/** Runs a wrk-family command on `url` with the bench's POST script, and reads what it printed. */
async function measured(command: string[], url: string, body: string, headers: Record<string, string>): Promise<WrkResult> {
  const run = Bun.spawn([...command, '--latency', '-s', LUA, url], {
    env: {
      ...process.env,
      BENCH_BODY: body,
      BENCH_HEADERS: Object.entries(headers)
        .map(([k, v]) => `${k}:${v}`)
        .join('|'),
    },
    stdout: 'pipe',
  })
  const out = await new Response(run.stdout).text()
  await run.exited
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0)
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  const socketErrors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    p50: percentileOf(out, '50'),
    p99: percentileOf(out, '99'),
    errors: non2xx + socketErrors,
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? 0),
  }
}

export function wrk(url: string, connections: number, seconds: number, body: string, headers: Record<string, string>): Promise<WrkResult> {
  const threads = Math.min(2, connections)
  return measured(['wrk', `-t${threads}`, `-c${connections}`, `-d${seconds}s`], url, body, headers)
}

/**
 * The same load spread over several instances, as a load balancer would: one wrk per instance, all
 * at once, the connections shared out. Throughput and errors add up; p50 is the median of the
 * instances' p50s and p99 the worst p99.
 */
export async function wrkSpread(urls: string[], connections: number, seconds: number, body: string, headers: Record<string, string>): Promise<WrkResult> {
  if (connections === 1) return wrk(urls[0]!, 1, seconds, body, headers)
  const share = (i: number) => Math.floor(connections / urls.length) + (i < connections % urls.length ? 1 : 0)
  const results = await Promise.all(urls.map((url, i) => wrk(url, share(i), seconds, body, headers)))
  const sorted = results.map((r) => r.p50).sort((a, b) => a - b)
  return {
    rps: results.reduce((sum, r) => sum + r.rps, 0),
    p50: sorted[Math.floor(sorted.length / 2)]!,
    p99: Math.max(...results.map((r) => r.p99)),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
    requests: results.reduce((sum, r) => sum + r.requests, 0),
  }
}

/** Whether wrk2 (constant-rate wrk; `bash ../shared/tools/wrk2/install.sh`) is installed. */
export const haveWrk2 = (): boolean => Bun.which('wrk2') !== null

/**
 * An open-loop run with wrk2: `rate` requests a second whatever the answers' pace, latency corrected
 * for coordinated omission (a slow answer delays the requests behind it, and they count it).
 */
export const wrk2 = (url: string, rate: number, seconds: number, body: string, headers: Record<string, string>): Promise<WrkResult> =>
  measured(['wrk2', '-t2', '-c32', `-d${seconds}s`, `-R${rate}`], url, body, headers)

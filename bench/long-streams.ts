/**
 * The "many long streams" scenario: `streams` completions of `seconds` each, all open at once through
 * one gateway instance (its own, fresh), sent over raw sockets: the bench's own `fetch` would be
 * capped at 256 concurrent requests. Reports how many streams the instance held at once, how many
 * completed, and its memory per open stream.
 *
 *   bun bench/long-streams.ts [--streams 4000] [--seconds 10]
 *
 * `bun run bench` runs it after its other scenarios (`--skip-long-streams` leaves it out).
 */
import { temporaryBuild } from '../scripts/build'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { type RawRequest, rawPost } from '../test/support/raw-http'
import { freePort, ROOT, rssMb, start, waitForHealthy } from './processes'

export interface LongStreamsResult {
  streams: number
  seconds: number
  /** The most streams open at once (a 200 head received, the stream not yet ended), as the clients saw them. */
  mostHeld: number
  /** Streams that ended normally: status 200, `[DONE]`, the last chunk. */
  completed: number
  /** The others, by what came back (a status, or a socket error). */
  failures: Record<string, number>
  /** From the first connect to the last stream's head. */
  openMs: number
  idleRssMb: number
  /** Gateway RSS once (about) half the streams were open, and once all were. */
  halfRssMb: number
  fullRssMb: number
  /** The highest gateway RSS while streams were open. */
  peakRssMb: number
  /** (peak RSS − idle RSS) / streams: what to plan for per open stream. */
  kbPerStream: number
  /** (RSS all open − RSS half open) / the streams opened in between: what one more stream costs. */
  marginalKbPerStream: number
}

/** Connections opened at once: thousands in one instant would overflow the listen backlog. */
const WAVE = 500

const config = (upstreamPort: number) => `
[tiers.bench]
requests_per_minute = 100000000
tokens_per_minute = 1000000000000
max_concurrent = 100000

[upstreams.slow]
kind = "openai"
base_url = "http://127.0.0.1:${upstreamPort}/v1"
max_retries = 0

[aliases."bench/long"]
targets = [{ upstream = "slow", model = "bench-model" }]
`

async function until(check: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const started = performance.now()
  while (!check()) {
    if (performance.now() - started > timeoutMs) throw new Error(`gave up waiting for ${what}`)
    await Bun.sleep(10)
  }
}

const answered = (r: RawRequest) => r.response.status !== null || r.response.closed || r.response.error !== null
const open = (r: RawRequest) => r.response.status === 200 && !r.response.closed
const completed = (r: RawRequest) => r.response.status === 200 && r.response.complete && r.response.body.includes('data: [DONE]')

/** Opens the streams in waves, samples the gateway while they run, and waits for all to end. */
async function load(url: string, key: string, pid: number, streams: number, seconds: number): Promise<LongStreamsResult> {
  const headers = { authorization: `Bearer ${key}` }
  const body = JSON.stringify({ model: 'bench/long', stream: true, messages: [{ role: 'user', content: 'Tell me a long story about foxes.' }] })
  const idleRssMb = rssMb(pid)
  const requests: RawRequest[] = []
  let mostHeld = 0
  let peakRssMb = idleRssMb
  const sampler = setInterval(() => {
    mostHeld = Math.max(mostHeld, requests.filter(open).length)
    peakRssMb = Math.max(peakRssMb, rssMb(pid))
  }, 100)
  const started = performance.now()
  let halfRssMb = 0
  let halfOpened = 0
  try {
    for (let opened = 0; opened < streams;) {
      const wave = Math.min(WAVE, streams - opened)
      requests.push(...(await Promise.all(Array.from({ length: wave }, () => rawPost(url, headers, body)))))
      opened += wave
      await until(() => requests.every(answered), `the heads of ${opened} streams`, 60_000)
      if (halfOpened === 0 && opened >= streams / 2) {
        halfRssMb = rssMb(pid)
        halfOpened = opened
      }
    }
    const openMs = performance.now() - started
    const fullRssMb = rssMb(pid)
    mostHeld = Math.max(mostHeld, requests.filter(open).length)
    await until(() => requests.every((r) => r.response.closed), 'every stream to end', (seconds * 3 + 60) * 1000)
    const failures: Record<string, number> = {}
    for (const r of requests.filter((r) => !completed(r))) {
      const kind = r.response.error ?? (r.response.status === 200 ? '200, cut short' : String(r.response.status))
      failures[kind] = (failures[kind] ?? 0) + 1
    }
    return {
      streams,
      seconds,
      mostHeld,
      completed: requests.filter(completed).length,
      failures,
      openMs,
      idleRssMb,
      halfRssMb,
      fullRssMb,
      peakRssMb,
      kbPerStream: ((peakRssMb - idleRssMb) * 1024) / streams,
      marginalKbPerStream: halfOpened < streams ? ((fullRssMb - halfRssMb) * 1024) / (streams - halfOpened) : NaN,
    }
  } finally {
    clearInterval(sampler)
  }
}

/** Starts a slow upstream and a fresh gateway on it, runs the scenario, and stops them. */
export async function measureLongStreams(streams: number, seconds: number): Promise<LongStreamsResult> {
  const work = mkdtempSync(join(tmpdir(), 'chatgate-long-streams-'))
  const upstreamPort = await freePort()
  const upstream = start(['bun', 'bench/slow-upstream.ts', String(upstreamPort), String(seconds)])
  await waitForHealthy(`http://127.0.0.1:${upstreamPort}/`)
  const configPath = join(work, 'gateway.toml')
  writeFileSync(configPath, config(upstreamPort))
  const env = { GATEWAY_DB: join(work, 'gateway.sqlite'), GATEWAY_CONFIG: configPath }
  const created = Bun.spawnSync(['bun', temporaryBuild('cli'), 'keys', 'create', '--name', 'long', '--tier', 'bench', '--json'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  })
  const key = (JSON.parse(created.stdout.toString()) as { key: string }).key
  const port = await freePort()
  const gateway = start(['bun', temporaryBuild('main')], { ...env, PORT: String(port) })
  try {
    await waitForHealthy(`http://127.0.0.1:${port}/health`)
    return await load(`http://127.0.0.1:${port}/v1/chat/completions`, key, gateway.pid, streams, seconds)
  } finally {
    gateway.kill('SIGTERM')
    upstream.kill('SIGTERM')
    await Promise.all([gateway.exited, upstream.exited])
    rmSync(work, { recursive: true, force: true })
  }
}

/** The scenario's lines for the report. */
export function describeLongStreams(r: LongStreamsResult): string[] {
  const failed = r.streams - r.completed
  const why =
    failed === 0
      ? ''
      : ` (${Object.entries(r.failures)
          .map(([kind, n]) => `${n} x ${kind}`)
          .join(', ')})`
  return [
    `many long streams: ${r.streams} streams of ${r.seconds} s through one instance, opened in ${(r.openMs / 1000).toFixed(1)} s: ${r.mostHeld} held at once, ${r.completed} completed, ${failed} failed${why}`,
    `many long streams RSS: idle ${r.idleRssMb.toFixed(1)} MB, half open ${r.halfRssMb.toFixed(1)} MB, all open ${r.fullRssMb.toFixed(1)} MB, peak ${r.peakRssMb.toFixed(1)} MB: ${r.kbPerStream.toFixed(1)} KB per open stream (peak over idle), ${r.marginalKbPerStream.toFixed(1)} KB marginal (half to all open)`,
  ]
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { streams: { type: 'string', default: '4000' }, seconds: { type: 'string', default: '10' } },
  })
  const result = await measureLongStreams(Number(values.streams), Number(values.seconds))
  console.log(describeLongStreams(result).join('\n'))
  console.log(JSON.stringify(result))
  process.exit(0)
}

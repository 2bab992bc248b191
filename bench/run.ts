/**
 * `bun run bench`: the gateway's tax, measured side by side with the direct upstream and a bare Bun
 * proxy (the floor), with wrk, on 127.0.0.1. Prints one table and writes it as JSON to bench/results/.
 *
 *   bun run bench [--runs 3] [--duration 10] [--peer portkey] [--skip-memory] [--skip-cluster] [--skip-observability]
 *                 [--skip-long-streams] [--long-streams 4000] [--long-stream-seconds 10] [--skip-steady]
 *
 * The cluster scenario runs 3 gateway instances on one Postgres and one Redis (started here from
 * Debian's packages, as the tests start them) beside the single instance on SQLite.
 */
import { temporaryBuild } from '../scripts/build'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { CLUSTER_SIZE, clusterMissing, startCluster } from './cluster'
import { type KindMock, startKindMocks } from './kinds'
import { describeLongStreams, type LongStreamsResult, measureLongStreams } from './long-streams'
import { freePort, ROOT, rssMb, start, waitForHealthy } from './processes'
import { describeCache, startCacheTarget } from './cache'
import { describeLeastLatency, LEAST_LATENCY, LEAST_LATENCY_ALIAS, LEAST_LATENCY_SCENARIOS, startLeastLatencyMock } from './least-latency'
import { describeRequestLog, startRequestLogTargets } from './request-log'
import { benchConfig } from './alone'
import { describeSteady, measureOpenLoop, measureSequential, startNodeMock } from './steady'
import { describeTracing, startTracingTargets } from './tracing'
import { type Check, cpuReport, kindOverhead, resultTable, responsesOverhead, summarize } from './report'
import { type Api, bodyFor, measureAll, PATHS, type Target } from './load'
import { wrk } from './wrk'

const { values: options } = parseArgs({
  args: process.argv.slice(2),
  options: {
    runs: { type: 'string', default: '3' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    peer: { type: 'string' },
    'skip-memory': { type: 'boolean', default: false },
    'skip-cluster': { type: 'boolean', default: false },
    'skip-observability': { type: 'boolean', default: false },
    'memory-requests': { type: 'string', default: '200000' },
    'skip-long-streams': { type: 'boolean', default: false },
    'skip-steady': { type: 'boolean', default: false },
    'long-streams': { type: 'string', default: '4000' },
    'long-stream-seconds': { type: 'string', default: '10' },
  },
})
const RUNS = Number(options.runs)
const DURATION = Number(options.duration)
const WARMUP = Number(options.warmup)

if (Bun.spawnSync(['which', 'wrk']).exitCode !== 0) {
  console.error('wrk is not installed. On Debian/Ubuntu: apt-get update && apt-get install -y wrk')
  process.exit(1)
}

// ---------------------------------------------------------------- setup

const work = mkdtempSync(join(tmpdir(), 'chatgate-bench-'))
const mockPort = await freePort()
start(['bun', 'bench/mock-upstream.ts', String(mockPort)])
await waitForHealthy(`http://127.0.0.1:${mockPort}/`)

// The other upstream kinds, each on its own fake, measured over it as the openai kind is over the mock.
const kindMocks: KindMock[] = await startKindMocks()
// A second mock, slower, for the least_latency alias over it and the fast one.
const leastLatency = await startLeastLatencyMock()
// A Node http mock and a bare proxy in front of it, for the sequential scenario.
const nodeMock = options['skip-steady'] ? null : await startNodeMock()

const barePort = await freePort()
const bareProxy = start(['bun', 'bench/bare-proxy.ts', String(barePort), `http://127.0.0.1:${mockPort}`])
const relayPort = await freePort()
const jsRelay = start(['bun', 'bench/bare-proxy.ts', String(relayPort), `http://127.0.0.1:${mockPort}`, 'relay'])

const configPath = join(work, 'gateway.toml')
writeFileSync(
  configPath,
  `${benchConfig(mockPort)}
[upstreams.mock_native]
kind = "openai"
base_url = "http://127.0.0.1:${mockPort}/v1"
responses = "native"

[aliases."bench/native"]
targets = [{ upstream = "mock_native", model = "bench-model" }]
${kindMocks.map((mock) => mock.toml).join('')}${leastLatency.toml}${nodeMock?.toml ?? ''}`,
)
const kindEnv: Record<string, string> = Object.assign({}, ...kindMocks.map((mock) => mock.env))
const gatewayEnv = { GATEWAY_DB: join(work, 'gateway.sqlite'), GATEWAY_CONFIG: configPath, ...kindEnv }
const created = Bun.spawnSync(['bun', temporaryBuild('cli'), 'keys', 'create', '--name', 'bench', '--tier', 'bench', '--json'], {
  cwd: ROOT,
  env: { ...process.env, ...gatewayEnv },
})
const key = (JSON.parse(created.stdout.toString()) as { key: string }).key

// The gateway's durable per-request work written directly, for JSON chat completions (lean-floor.ts).
const leanPort = await freePort()
const leanFloor = start(['bun', 'bench/lean-floor.ts', String(leanPort), `http://127.0.0.1:${mockPort}`, key, 'bench/fast', work])

const gatewayPort = await freePort()
const gateway = start(['bun', temporaryBuild('main')], { ...gatewayEnv, PORT: String(gatewayPort) })
const startupMs = await waitForHealthy(`http://127.0.0.1:${gatewayPort}/health`)
await waitForHealthy(`http://127.0.0.1:${barePort}/`)
await waitForHealthy(`http://127.0.0.1:${relayPort}/`)
await waitForHealthy(`http://127.0.0.1:${leanPort}/`)

const both: Api[] = ['chat', 'responses']
const targets: Target[] = [
  { name: 'direct', url: `http://127.0.0.1:${mockPort}`, apis: both, headers: {}, model: 'bench-model' },
  { name: 'bare proxy', url: `http://127.0.0.1:${barePort}`, apis: both, headers: {}, model: 'bench-model', pid: bareProxy.pid },
  { name: 'JS relay', url: `http://127.0.0.1:${relayPort}`, headers: {}, model: 'bench-model', pid: jsRelay.pid },
  {
    name: 'lean floor',
    url: `http://127.0.0.1:${leanPort}`,
    headers: { Authorization: `Bearer ${key}` },
    model: 'bench/fast',
    pid: leanFloor.pid,
    scenarios: ['json c1', 'json c32'],
  },
  // On the Responses API: translated through chat completions to the mock.
  { name: 'chatgate', url: `http://127.0.0.1:${gatewayPort}`, apis: both, headers: { Authorization: `Bearer ${key}` }, model: 'bench/fast', pid: gateway.pid },
  // The Responses API passed through to a native upstream, as sent.
  {
    name: 'native',
    url: `http://127.0.0.1:${gatewayPort}`,
    apis: ['responses'],
    headers: { Authorization: `Bearer ${key}` },
    model: 'bench/native',
    pid: gateway.pid,
  },
]

/** Each other kind through the gateway, and its fake asked directly, in the c32 chat scenarios. */
const KIND_SCENARIOS = ['json c32', 'stream c32']
for (const mock of kindMocks) {
  targets.push(
    { name: `direct ${mock.kind}`, url: mock.direct.url, headers: mock.direct.headers, model: '', scenarios: KIND_SCENARIOS, request: mock.direct },
    {
      name: `${mock.kind} kind`,
      url: `http://127.0.0.1:${gatewayPort}`,
      headers: { Authorization: `Bearer ${key}` },
      model: mock.alias,
      scenarios: KIND_SCENARIOS,
      pid: gateway.pid,
    },
  )
}

// least_latency over the fast mock and a slower one, beside the one-target alias.
targets.push({
  name: LEAST_LATENCY,
  url: `http://127.0.0.1:${gatewayPort}`,
  headers: { Authorization: `Bearer ${key}` },
  model: LEAST_LATENCY_ALIAS,
  scenarios: LEAST_LATENCY_SCENARIOS,
  pid: gateway.pid,
})
// Cache hits, on a gateway whose alias caches.
const cacheHits = await startCacheTarget(configPath, gatewayEnv, 'bench/fast')
targets.push(cacheHits.target)

// Tracing and the request log, each on gateways of their own beside the same with it off.
const tracing = options['skip-observability'] ? null : await startTracingTargets(configPath, gatewayEnv, 'bench/fast')
const requestLog = options['skip-observability'] ? null : await startRequestLogTargets(configPath, gatewayEnv, 'bench/fast')
if (tracing) targets.push(...tracing.targets)
if (requestLog) targets.push(...requestLog.targets)

if (options.peer === 'portkey') {
  const dir = join(work, 'portkey')
  mkdirSync(dir)
  console.error('installing @portkey-ai/gateway from npm ...')
  const install = Bun.spawnSync(['npm', 'install', '--no-audit', '--no-fund', '--prefix', dir, '@portkey-ai/gateway'], { stderr: 'inherit' })
  if (install.exitCode !== 0) throw new Error('npm install @portkey-ai/gateway failed')
  const portkeyPort = await freePort()
  const entry = join(dir, 'node_modules/@portkey-ai/gateway/build/start-server.js')
  // Portkey prints a stack trace for every failed stream; its errors are counted in the table instead.
  const portkey = start(['node', entry, `--port=${portkeyPort}`, '--headless'], {}, 'ignore')
  await waitForHealthy(`http://127.0.0.1:${portkeyPort}/`, 30_000)
  targets.push({
    name: 'portkey',
    url: `http://127.0.0.1:${portkeyPort}`,
    headers: { 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `http://127.0.0.1:${mockPort}/v1`, Authorization: 'Bearer sk-bench' },
    model: 'bench-model',
    pid: portkey.pid,
  })
}

const idleRssMb = rssMb(gateway.pid)

// ---------------------------------------------------------------- cluster

const missingForCluster = clusterMissing(options['skip-cluster'])
if (missingForCluster !== null) console.error(`cluster scenario not run: ${missingForCluster}`)
const cluster = missingForCluster === null ? await startCluster(configPath, kindEnv, work) : null
if (cluster) targets.push(cluster.target)

// ---------------------------------------------------------------- load

const { samples, leastLatencyAttempts } = await measureAll(targets, { runs: RUNS, warmupSeconds: WARMUP, seconds: DURATION })

// ---------------------------------------------------------------- sequential and open loop

const steady = options['skip-steady']
  ? null
  : describeSteady(
      nodeMock ? await measureSequential(nodeMock, `http://127.0.0.1:${gatewayPort}`, key) : 'skipped (node is not installed)',
      (await measureOpenLoop(
        {
          direct: `http://127.0.0.1:${mockPort}${PATHS.chat}`,
          bare: `http://127.0.0.1:${barePort}${PATHS.chat}`,
          gateway: `http://127.0.0.1:${gatewayPort}${PATHS.chat}`,
        },
        { direct: bodyFor('bench-model', false), gateway: bodyFor('bench/fast', false) },
        { Authorization: `Bearer ${key}` },
        DURATION,
      )) ?? 'skipped (wrk2 is not installed: bash ../shared/tools/wrk2/install.sh)',
    )

const peakRssMb = rssMb(gateway.pid, 'VmHWM')
const clusterPeakRssMb = cluster?.pids.map((pid) => rssMb(pid, 'VmHWM')) ?? []
await cluster?.dispose()
await Promise.all([tracing?.dispose(), requestLog?.dispose(), cacheHits.dispose()])
leastLatency.dispose()

// ---------------------------------------------------------------- memory check

let memory: { after20k: number; after200k: number; requests: number; growthPct: number } | null = null
if (!options['skip-memory']) {
  const target = targets.find((t) => t.name === 'chatgate')!
  const body = bodyFor(target.model, false)
  const total = Number(options['memory-requests'])
  let sent = 0
  const until = async (count: number) => {
    while (sent < count) {
      const rate = Math.max(1000, samples['json c32']?.[target.name]?.[0]?.rps ?? 5000)
      const seconds = Math.max(1, Math.ceil(((count - sent) / rate) * 1.05))
      sent += (await wrk(target.url + PATHS.chat, 32, seconds, body, target.headers)).requests
    }
  }
  await until(Math.round(total / 10))
  Bun.gc(true)
  const after20k = rssMb(gateway.pid)
  await until(total)
  const after200k = rssMb(gateway.pid)
  memory = { after20k, after200k, requests: sent, growthPct: ((after200k - after20k) / after20k) * 100 }
}

// ---------------------------------------------------------------- many long streams

const longStreams: LongStreamsResult | null = options['skip-long-streams']
  ? null
  : await measureLongStreams(Number(options['long-streams']), Number(options['long-stream-seconds']))

// ---------------------------------------------------------------- report

const summary = summarize(samples)
const lines = resultTable(summary, RUNS, DURATION)
lines.push('')
lines.push(`chatgate startup to first healthy /health: ${startupMs.toFixed(0)} ms`)
lines.push(`chatgate RSS: idle ${idleRssMb.toFixed(1)} MB, peak under load ${peakRssMb.toFixed(1)} MB`)
const clusterC1 = cluster ? summary['json c1']?.[cluster.target.name] : undefined
if (cluster && clusterC1) {
  const single = summary['json c1']!.chatgate!
  lines.push(
    `cluster (${CLUSTER_SIZE} instances on Postgres + Redis) json c1 over one instance on SQLite: p50 +${(clusterC1.p50 - single.p50).toFixed(3)} ms, p99 +${(clusterC1.p99 - single.p99).toFixed(3)} ms`,
  )
  lines.push(
    `cluster RSS per instance: idle ${cluster.idleRssMb.map((mb) => mb.toFixed(1)).join(' / ')} MB, peak under load ${clusterPeakRssMb.map((mb) => mb.toFixed(1)).join(' / ')} MB`,
  )
}
if (memory) {
  lines.push(
    `memory check: RSS after ${Math.round(Number(options['memory-requests']) / 10)} requests ${memory.after20k.toFixed(1)} MB, after ${memory.requests} requests ${memory.after200k.toFixed(1)} MB (${memory.growthPct >= 0 ? '+' : ''}${memory.growthPct.toFixed(1)}%)`,
  )
}
if (longStreams) lines.push(...describeLongStreams(longStreams))
const j = summary['json c32']!
const s = summary['stream c32']!
const c1 = summary['json c1']!
const kindNames = kindMocks.map((mock) => mock.kind)
const responses = responsesOverhead(summary)
const kinds = kindOverhead(summary, kindNames)
const cpu = cpuReport(summary, kindNames)
for (const report of [responses, kinds, cpu]) lines.push(...report.lines)
const observability = [
  tracing ? describeTracing(summary, tracing.receiver) : null,
  requestLog ? describeRequestLog(summary) : null,
  describeCache(summary),
  describeLeastLatency(summary, leastLatencyAttempts),
]
for (const report of observability) if (report) lines.push(...report.lines)
if (steady) lines.push(...steady.lines)
const checks: Check[] = [
  [`JSON c32 req/s >= 0.9 x bare proxy`, j.chatgate!.rps >= 0.9 * j['bare proxy']!.rps],
  [`JSON c1 p50 - direct p50 <= 0.15 ms`, c1.chatgate!.p50 - c1.direct!.p50 <= 0.15],
  [`JSON c1 p99 - direct p99 <= 1 ms`, c1.chatgate!.p99 - c1.direct!.p99 <= 1],
  [`stream c32 req/s >= 0.85 x bare proxy`, s.chatgate!.rps >= 0.85 * s['bare proxy']!.rps],
  [`peak RSS <= 120 MB`, peakRssMb <= 120],
  [`startup <= 300 ms`, startupMs <= 300],
  ...cpu.checks,
  ...(steady?.checks ?? []),
  ...(memory ? [[`RSS growth 20k -> 200k within 20%`, Math.abs(memory.growthPct) <= 20] as Check] : []),
  ...(clusterC1 ? [[`cluster JSON c1 p50 - single-instance p50 <= 0.5 ms`, clusterC1.p50 - c1.chatgate!.p50 <= 0.5] as Check] : []),
  ...(longStreams
    ? [
        [
          `${longStreams.streams} long streams through one instance: all held at once, all complete`,
          longStreams.mostHeld === longStreams.streams && longStreams.completed === longStreams.streams,
        ] as Check,
      ]
    : []),
  ...responses.checks,
  ...kinds.checks,
  ...(j.portkey ? [[`JSON c32 req/s >= 15 x portkey`, j.chatgate!.rps >= 15 * j.portkey.rps] as Check] : []),
  ...observability.flatMap((report) => report?.checks ?? []),
]
lines.push('')
for (const [name, ok] of checks) lines.push(`${ok ? 'PASS' : 'MISS'}  ${name}`)
console.log(lines.join('\n'))

mkdirSync(join(ROOT, 'bench/results'), { recursive: true })
const file = join(ROOT, 'bench/results', `${new Date().toISOString().replace(/[:.]/g, '-')}.json`)
writeFileSync(
  file,
  JSON.stringify(
    {
      runs: RUNS,
      durationSeconds: DURATION,
      summary,
      samples,
      startupMs,
      idleRssMb,
      peakRssMb,
      cluster: cluster && { idleRssMb: cluster.idleRssMb, peakRssMb: clusterPeakRssMb },
      memory,
      longStreams,
      checks: Object.fromEntries(checks),
    },
    null,
    2,
  ),
)
console.log(`\nwritten to ${file}`)
rmSync(work, { recursive: true, force: true })
process.exit(0)

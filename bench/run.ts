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
import { postgresMissing, redisMissing, startPostgres, startRedis } from '../test/support/servers'
import { type KindMock, startKindMocks } from './kinds'
import { describeLongStreams, type LongStreamsResult, measureLongStreams } from './long-streams'
import { cpuSeconds, freePort, ROOT, rssMb, start, waitForHealthy } from './processes'
import { describeCache, startCacheTarget } from './cache'
import { describeLeastLatency, LEAST_LATENCY, LEAST_LATENCY_ALIAS, LEAST_LATENCY_SCENARIOS, readAttempts, startLeastLatencyMock } from './least-latency'
import { describeRequestLog, startRequestLogTargets } from './request-log'
import { benchConfig } from './alone'
import { describeSteady, measureOpenLoop, measureSequential, startNodeMock } from './steady'
import { describeTracing, startTracingTargets } from './tracing'
import { type WrkResult, wrk, wrkSpread } from './wrk'

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

/** What a scenario speaks: OpenAI's chat completions, or its Responses API. */
type Api = 'chat' | 'responses'
const PATHS: Record<Api, string> = { chat: '/v1/chat/completions', responses: '/v1/responses' }

interface Target {
  name: string
  url: string
  /** The APIs it is measured on (default: chat only). */
  apis?: Api[]
  /** Several instances behind one name (the cluster): the load is spread over them. */
  urls?: string[]
  headers: Record<string, string>
  model: string
  pid?: number
  /** The scenarios it runs in (default: all of its APIs'). */
  scenarios?: string[]
  /** Its own request, for a fake asked in its own dialect (default: chat completions or Responses at `model`). */
  request?: { path(stream: boolean): string; body(stream: boolean): string }
}
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

const CLUSTER_SIZE = 3
let cluster: { pids: number[]; idleRssMb: number[]; dispose(): Promise<void> } | null = null
const clusterMissing = options['skip-cluster'] ? 'skipped (--skip-cluster)' : (redisMissing() ?? postgresMissing())
if (clusterMissing !== null) {
  console.error(`cluster scenario not run: ${clusterMissing}`)
} else {
  const [redis, postgres] = await Promise.all([startRedis(), startPostgres()])
  const clusterEnv = {
    DATABASE_URL: await postgres.createDatabase(),
    REDIS_URL: redis.url,
    GATEWAY_CONFIG: configPath,
    GATEWAY_DB: join(work, 'cluster', 'unused.sqlite'),
    ...kindEnv,
  }
  const made = Bun.spawnSync(['bun', temporaryBuild('cli'), 'keys', 'create', '--name', 'bench', '--tier', 'bench', '--json'], {
    cwd: ROOT,
    env: { ...process.env, ...clusterEnv },
  })
  const clusterKey = (JSON.parse(made.stdout.toString()) as { key: string }).key
  const instances = await Promise.all(
    Array.from({ length: CLUSTER_SIZE }, async () => {
      const port = await freePort()
      const child = start(['bun', temporaryBuild('main')], { ...clusterEnv, PORT: String(port) })
      await waitForHealthy(`http://127.0.0.1:${port}/health`)
      return { child, url: `http://127.0.0.1:${port}` }
    }),
  )
  cluster = {
    pids: instances.map((i) => i.child.pid),
    idleRssMb: instances.map((i) => rssMb(i.child.pid)),
    async dispose() {
      for (const instance of instances) instance.child.kill('SIGTERM')
      await Promise.all(instances.map((i) => i.child.exited))
      await Promise.all([redis.dispose(), postgres.dispose()])
    },
  }
  targets.push({
    name: `cluster x${CLUSTER_SIZE}`,
    url: instances[0]!.url,
    urls: instances.map((i) => i.url),
    headers: { Authorization: `Bearer ${clusterKey}` },
    model: 'bench/fast',
  })
}

// ---------------------------------------------------------------- load

const scenarios: { name: string; api: Api; stream: boolean; connections: number }[] = [
  { name: 'json c1', api: 'chat', stream: false, connections: 1 },
  { name: 'json c32', api: 'chat', stream: false, connections: 32 },
  { name: 'stream c1', api: 'chat', stream: true, connections: 1 },
  { name: 'stream c32', api: 'chat', stream: true, connections: 32 },
  { name: 'resp json', api: 'responses', stream: false, connections: 32 },
  { name: 'resp strm', api: 'responses', stream: true, connections: 32 },
]
const bodyFor = (model: string, stream: boolean, api: Api = 'chat') =>
  JSON.stringify({
    model,
    ...(api === 'chat' ? { messages: [{ role: 'user', content: 'Say something about foxes.' }] } : { input: 'Say something about foxes.' }),
    ...(stream ? { stream: true } : {}),
  })

/** A measured run, with the CPU its target's process spent per request in it (µs; null for a target that is not one process of ours). */
type Sample = WrkResult & { cpuUs: number | null }
const samples: Record<string, Record<string, Sample[]>> = {}
/** Successful attempts per upstream during the least_latency rows' runs. */
const leastLatencyAttempts: Record<string, number> = {}
for (let run = 1; run <= RUNS; run++) {
  for (const scenario of scenarios) {
    for (const target of targets) {
      if (!(target.apis ?? ['chat']).includes(scenario.api)) continue
      if (target.scenarios && !target.scenarios.includes(scenario.name)) continue
      const body = target.request?.body(scenario.stream) ?? bodyFor(target.model, scenario.stream, scenario.api)
      const path = target.request?.path(scenario.stream) ?? PATHS[scenario.api]
      const urls = (target.urls ?? [target.url]).map((base) => base + path)
      const attemptsBefore = target.name === LEAST_LATENCY ? await readAttempts(target.url) : null
      await wrkSpread(urls, scenario.connections, WARMUP, body, target.headers)
      const cpuBefore = target.pid === undefined ? null : cpuSeconds(target.pid)
      const measured = await wrkSpread(urls, scenario.connections, DURATION, body, target.headers)
      const cpuUs = cpuBefore === null || measured.requests === 0 ? null : ((cpuSeconds(target.pid!) - cpuBefore) / measured.requests) * 1e6
      const result: Sample = { ...measured, cpuUs }
      if (attemptsBefore) {
        const after = await readAttempts(target.url)
        for (const [upstream, count] of Object.entries(after))
          leastLatencyAttempts[upstream] = (leastLatencyAttempts[upstream] ?? 0) + count - (attemptsBefore[upstream] ?? 0)
      }
      ;((samples[scenario.name] ??= {})[target.name] ??= []).push(result)
      console.error(
        `run ${run}/${RUNS} ${scenario.name.padEnd(10)} ${target.name.padEnd(10)} ${result.rps.toFixed(0).padStart(7)} req/s  p50 ${result.p50.toFixed(3)} ms  p99 ${result.p99.toFixed(3)} ms  errors ${result.errors}`,
      )
    }
  }
}
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

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
const summary: Record<string, Record<string, { rps: number; p50: number; p99: number; errors: number; cpuUs: number | null }>> = {}
for (const [scenario, byTarget] of Object.entries(samples)) {
  for (const [target, results] of Object.entries(byTarget)) {
    ;(summary[scenario] ??= {})[target] = {
      rps: median(results.map((r) => r.rps)),
      p50: median(results.map((r) => r.p50)),
      p99: median(results.map((r) => r.p99)),
      errors: results.reduce((sum, r) => sum + r.errors, 0),
      cpuUs: results[0]!.cpuUs === null ? null : median(results.map((r) => r.cpuUs!)),
    }
  }
}

const lines: string[] = []
const pad = (s: string, n: number) => s.padEnd(n)
lines.push(`chatgate benchmark: medians of ${RUNS} run(s), ${DURATION} s each, wrk on 127.0.0.1 (${new Date().toISOString()})`)
lines.push('')
lines.push(
  `${pad('scenario', 11)}${pad('target', 15)}${'req/s'.padStart(9)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'errors'.padStart(8)}${'÷ bare'.padStart(8)}${'÷ relay'.padStart(9)}${'÷ direct'.padStart(10)}${'p50 Δ'.padStart(9)}${'p99 Δ'.padStart(9)}${'CPU µs'.padStart(9)}${'÷ bare'.padStart(8)}`,
)
/** The row a target's overhead is measured over: its kind's own fake for another kind, else the openai mock. */
const directRowOf = (target: string) => /^(\w+) kind$/.exec(target)?.[1]
for (const [scenario, byTarget] of Object.entries(summary)) {
  const bare = byTarget['bare proxy']!
  const relay = byTarget['JS relay']
  for (const [target, r] of Object.entries(byTarget)) {
    const kind = directRowOf(target)
    const direct = (kind ? byTarget[`direct ${kind}`] : byTarget.direct)!
    const isDirect = target === 'direct' || target.startsWith('direct ')
    const vsBare = isDirect ? '' : (r.rps / bare.rps).toFixed(2)
    const vsRelay = isDirect || target === 'bare proxy' || !relay ? '' : (r.rps / relay.rps).toFixed(2)
    const vsDirect = isDirect ? '' : (r.rps / direct.rps).toFixed(2)
    const p50d = isDirect ? '' : `+${(r.p50 - direct.p50).toFixed(3)}`
    const p99d = isDirect ? '' : `+${(r.p99 - direct.p99).toFixed(3)}`
    // CPU per request of the target's own process (the load generator and the upstream not counted), and over the bare proxy's.
    const cpu = r.cpuUs === null ? '' : r.cpuUs.toFixed(0)
    const cpuVsBare = r.cpuUs === null || bare.cpuUs === null || target === 'bare proxy' ? '' : (r.cpuUs / bare.cpuUs).toFixed(2)
    lines.push(
      `${pad(scenario, 11)}${pad(target, 15)}${r.rps.toFixed(0).padStart(9)}${r.p50.toFixed(3).padStart(9)}${r.p99.toFixed(3).padStart(9)}${String(r.errors).padStart(8)}${vsBare.padStart(8)}${vsRelay.padStart(9)}${vsDirect.padStart(10)}${p50d.padStart(9)}${p99d.padStart(9)}${cpu.padStart(9)}${cpuVsBare.padStart(8)}`,
    )
  }
}
lines.push('')
lines.push(`chatgate startup to first healthy /health: ${startupMs.toFixed(0)} ms`)
lines.push(`chatgate RSS: idle ${idleRssMb.toFixed(1)} MB, peak under load ${peakRssMb.toFixed(1)} MB`)
const clusterName = `cluster x${CLUSTER_SIZE}`
const clusterC1 = summary['json c1']?.[clusterName]
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
// The Responses API's overhead over the bare proxy (added p50), beside chat completions' in the same run.
const added = (row: Record<string, { p50: number }> | undefined, target: string) => (row?.[target]?.p50 ?? NaN) - (row?.['bare proxy']?.p50 ?? NaN)
const responsesOverhead = [
  ['JSON', added(summary['resp json'], 'native'), added(summary['resp json'], 'chatgate'), added(j, 'chatgate')],
  ['stream', added(summary['resp strm'], 'native'), added(summary['resp strm'], 'chatgate'), added(s, 'chatgate')],
] as const
for (const [kind, native, translated, chat] of responsesOverhead) {
  lines.push(
    `Responses API ${kind} c32, p50 added over the bare proxy: native ${native.toFixed(3)} ms, translated ${translated.toFixed(3)} ms; chat completions ${chat.toFixed(3)} ms`,
  )
}
// Each other kind's overhead over its own fake, beside the openai kind's over the mock.
const overOwnDirect = (row: Record<string, { p50: number }> | undefined, target: string, direct: string) =>
  (row?.[target]?.p50 ?? NaN) - (row?.[direct]?.p50 ?? NaN)
const kindOverhead = kindMocks.flatMap((mock) =>
  (['json c32', 'stream c32'] as const).map((scenario) => ({
    kind: mock.kind,
    scenario,
    added: overOwnDirect(summary[scenario], `${mock.kind} kind`, `direct ${mock.kind}`),
    openai: overOwnDirect(summary[scenario], 'chatgate', 'direct'),
  })),
)
for (const { kind, scenario, added: kindAdded, openai } of kindOverhead) {
  lines.push(`${kind} kind ${scenario}, p50 added over its own upstream: ${kindAdded.toFixed(3)} ms; openai kind ${openai.toFixed(3)} ms`)
}
// CPU per request side by side: every inbound API and upstream kind beside chat completions to the
// openai mock, and each over the bare proxy's (what the /proc counters say, whatever else loads the machine).
const cpuOf = (scenario: string, target: string) => summary[scenario]?.[target]?.cpuUs ?? null
const cpuRatio = (scenario: string, target: string) => {
  const cpu = cpuOf(scenario, target)
  const bare = cpuOf(scenario, 'bare proxy')
  return cpu === null || bare === null ? null : cpu / bare
}
const cpuRows: [string, string, string][] = [
  ['lean floor JSON (the durable work alone, lean-floor.ts)', 'json c32', 'lean floor'],
  ['chat completions JSON', 'json c32', 'chatgate'],
  ['chat completions stream', 'stream c32', 'chatgate'],
  ['Responses JSON, translated', 'resp json', 'chatgate'],
  ['Responses JSON, native', 'resp json', 'native'],
  ['Responses stream, translated', 'resp strm', 'chatgate'],
  ['Responses stream, native', 'resp strm', 'native'],
  ...kindMocks.flatMap((mock) => [
    [`${mock.kind} kind JSON`, 'json c32', `${mock.kind} kind`] as [string, string, string],
    [`${mock.kind} kind stream`, 'stream c32', `${mock.kind} kind`] as [string, string, string],
  ]),
]
for (const [label, scenario, target] of cpuRows) {
  const cpu = cpuOf(scenario, target)
  const ratio = cpuRatio(scenario, target)
  if (cpu !== null) lines.push(`CPU per request, ${label}: ${cpu.toFixed(0)} µs${ratio === null ? '' : ` (${ratio.toFixed(2)} x the bare proxy's)`}`)
}
const cpuChecks = (['json c32', 'stream c32'] as const).flatMap((scenario) => {
  const ratio = cpuRatio(scenario, 'chatgate')
  return ratio === null ? [] : [[`${scenario} CPU per request <= 1.5 x bare proxy's (${ratio.toFixed(2)} x)`, ratio <= 1.5] as [string, boolean]]
})
const observability = [
  tracing ? describeTracing(summary, tracing.receiver) : null,
  requestLog ? describeRequestLog(summary) : null,
  describeCache(summary),
  describeLeastLatency(summary, leastLatencyAttempts),
]
for (const report of observability) if (report) lines.push(...report.lines)
if (steady) lines.push(...steady.lines)
const checks = [
  [`JSON c32 req/s >= 0.9 x bare proxy`, j.chatgate!.rps >= 0.9 * j['bare proxy']!.rps],
  [`JSON c1 p50 - direct p50 <= 0.15 ms`, c1.chatgate!.p50 - c1.direct!.p50 <= 0.15],
  [`JSON c1 p99 - direct p99 <= 1 ms`, c1.chatgate!.p99 - c1.direct!.p99 <= 1],
  [`stream c32 req/s >= 0.85 x bare proxy`, s.chatgate!.rps >= 0.85 * s['bare proxy']!.rps],
  [`peak RSS <= 120 MB`, peakRssMb <= 120],
  [`startup <= 300 ms`, startupMs <= 300],
  ...cpuChecks,
  ...(steady?.checks ?? []),
  ...(memory ? [[`RSS growth 20k -> 200k within 20%`, Math.abs(memory.growthPct) <= 20] as [string, boolean]] : []),
  ...(clusterC1 ? [[`cluster JSON c1 p50 - single-instance p50 <= 0.5 ms`, clusterC1.p50 - c1.chatgate!.p50 <= 0.5] as [string, boolean]] : []),
  ...(longStreams
    ? [
        [
          `${longStreams.streams} long streams through one instance: all held at once, all complete`,
          longStreams.mostHeld === longStreams.streams && longStreams.completed === longStreams.streams,
        ] as [string, boolean],
      ]
    : []),
  ...responsesOverhead.map(
    ([kind, native, translated, chat]) =>
      [`Responses ${kind} overhead (native and translated) within 10% of chat completions'`, Math.max(native, translated) <= chat * 1.1] as [string, boolean],
  ),
  ...kindOverhead
    .filter(({ kind }) => kind === 'gemini')
    .map(
      ({ kind, scenario, added: kindAdded, openai }) =>
        [`${kind} kind ${scenario} overhead within 10% of the openai kind's`, kindAdded <= openai * 1.1] as [string, boolean],
    ),
  ...(j.portkey ? [[`JSON c32 req/s >= 15 x portkey`, j.chatgate!.rps >= 15 * j.portkey.rps] as [string, boolean]] : []),
  ...observability.flatMap((report) => report?.checks ?? []),
] as [string, boolean][]
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

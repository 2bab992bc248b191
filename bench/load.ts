/**
 * `bun run bench`'s load: its targets' shape, its scenarios (chat completions and the Responses
 * API, JSON and streamed, at 1 and 32 connections), and the runs: for each run, scenario and target,
 * a wrk warm-up, then a measured run with the CPU the target's process spent on it.
 */
import { LEAST_LATENCY, readAttempts } from './least-latency'
import { cpuSeconds } from './processes'
import type { Sample } from './report'
import { wrkSpread } from './wrk'

/** What a scenario speaks: OpenAI's chat completions, or its Responses API. */
export type Api = 'chat' | 'responses'
export const PATHS: Record<Api, string> = { chat: '/v1/chat/completions', responses: '/v1/responses' }

export interface Target {
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

const SCENARIOS: { name: string; api: Api; stream: boolean; connections: number }[] = [
  { name: 'json c1', api: 'chat', stream: false, connections: 1 },
  { name: 'json c32', api: 'chat', stream: false, connections: 32 },
  { name: 'stream c1', api: 'chat', stream: true, connections: 1 },
  { name: 'stream c32', api: 'chat', stream: true, connections: 32 },
  { name: 'resp json', api: 'responses', stream: false, connections: 32 },
  { name: 'resp strm', api: 'responses', stream: true, connections: 32 },
]

export const bodyFor = (model: string, stream: boolean, api: Api = 'chat') =>
  JSON.stringify({
    model,
    ...(api === 'chat' ? { messages: [{ role: 'user', content: 'Say something about foxes.' }] } : { input: 'Say something about foxes.' }),
    ...(stream ? { stream: true } : {}),
  })

export interface Timing {
  runs: number
  warmupSeconds: number
  seconds: number
}

/** One target in one scenario: warm-up, then the measured run with its process's CPU per request. */
async function measure(target: Target, scenario: (typeof SCENARIOS)[number], timing: Timing): Promise<Sample> {
  const body = target.request?.body(scenario.stream) ?? bodyFor(target.model, scenario.stream, scenario.api)
  const path = target.request?.path(scenario.stream) ?? PATHS[scenario.api]
  const urls = (target.urls ?? [target.url]).map((base) => base + path)
  await wrkSpread(urls, scenario.connections, timing.warmupSeconds, body, target.headers)
  const cpuBefore = target.pid === undefined ? null : cpuSeconds(target.pid)
  const measured = await wrkSpread(urls, scenario.connections, timing.seconds, body, target.headers)
  const cpuUs = cpuBefore === null || measured.requests === 0 ? null : ((cpuSeconds(target.pid!) - cpuBefore) / measured.requests) * 1e6
  return { ...measured, cpuUs }
}

/**
 * Every run of every scenario on every target that takes part in it. Also counts the successful
 * attempts per upstream during the least_latency rows' runs.
 */
export async function measureAll(
  targets: Target[],
  timing: Timing,
): Promise<{ samples: Record<string, Record<string, Sample[]>>; leastLatencyAttempts: Record<string, number> }> {
  const samples: Record<string, Record<string, Sample[]>> = {}
  const leastLatencyAttempts: Record<string, number> = {}
  for (let run = 1; run <= timing.runs; run++) {
    for (const scenario of SCENARIOS) {
      for (const target of targets) {
        if (!(target.apis ?? ['chat']).includes(scenario.api)) continue
        if (target.scenarios && !target.scenarios.includes(scenario.name)) continue
        const attemptsBefore = target.name === LEAST_LATENCY ? await readAttempts(target.url) : null
        const result = await measure(target, scenario, timing)
        if (attemptsBefore) {
          const after = await readAttempts(target.url)
          for (const [upstream, count] of Object.entries(after))
            leastLatencyAttempts[upstream] = (leastLatencyAttempts[upstream] ?? 0) + count - (attemptsBefore[upstream] ?? 0)
        }
        ;((samples[scenario.name] ??= {})[target.name] ??= []).push(result)
        console.error(
          `run ${run}/${timing.runs} ${scenario.name.padEnd(10)} ${target.name.padEnd(10)} ${result.rps.toFixed(0).padStart(7)} req/s  p50 ${result.p50.toFixed(3)} ms  p99 ${result.p99.toFixed(3)} ms  errors ${result.errors}`,
        )
      }
    }
  }
  return { samples, leastLatencyAttempts }
}

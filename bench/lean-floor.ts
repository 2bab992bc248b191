/**
 * The lean floor: the work chatgate must do for a JSON chat completion, written directly on
 * Bun.serve with none of the gateway's layers (no framework, no exchange or dispatch objects, no
 * request record, no metrics). What the floor does per request: the key's SHA-256 looked up in a
 * map, the body parsed and its model checked, a per-key request count (the limiter's bookkeeping),
 * the alias swapped for the upstream model in the caller's text, an abortable upstream call with
 * two timers, the answer parsed and its model swapped back, a usage line and a request-log line
 * appended to journals (one write() each per event-loop turn, before the answer goes out), an
 * access-log line, and the gateway's thirteen response headers. No routing choices, budgets, cache
 * or conversation store: those cost nothing on the bench's path but their checks.
 *
 * It is not a gateway: it serves one alias to one upstream and trusts its input. It answers how far
 * the gateway's CPU per request is from what its durable work needs, and so where the gap is: in the
 * work, or in the layers around it. Usage: bun bench/lean-floor.ts <port> <upstream base url> <key> <alias> <journal dir>
 */
import { openSync, writeSync } from 'node:fs'
import { join } from 'node:path'

const [port, upstream, key, alias, dir] = [Number(process.argv[2]), process.argv[3]!, process.argv[4]!, process.argv[5]!, process.argv[6]!]
const UPSTREAM_MODEL = 'bench-model'
const keys = new Map([[Bun.SHA256.hash(key, 'hex') as unknown as string, { id: 'key-1', prefix: key.slice(0, 12), tier: 'bench' }]])
const requestsByKey = new Map<string, number>()
const quotedAlias = JSON.stringify(alias)
const quotedModel = JSON.stringify(UPSTREAM_MODEL)

/** Lines appended in one event-loop turn, written together at its end; the callers wait for the write. */
function turnJournal(path: string): (line: string) => Promise<void> {
  const fd = openSync(path, 'a')
  let lines: string[] = []
  let waiting: (() => void)[] = []
  const write = () => {
    writeSync(fd, lines.join(''))
    const done = waiting
    lines = []
    waiting = []
    for (const resolve of done) resolve()
  }
  return (line) =>
    new Promise((resolve) => {
      if (lines.length === 0) setImmediate(write)
      lines.push(line)
      waiting.push(resolve)
    })
}
const usageJournal = turnJournal(join(dir, 'usage.log'))
const requestJournal = turnJournal(join(dir, 'requests.log'))
// The access log as the gateway's logger writes it: lines gathered, then written to stdout every 100 ms.
const stdout = Bun.stdout.writer()
let accessLog = ''
setInterval(() => {
  if (accessLog === '') return
  stdout.write(accessLog)
  void stdout.flush()
  accessLog = ''
}, 100)
let uid = 0

async function complete(request: Request): Promise<Response> {
  const started = performance.now()
  const caller = keys.get(Bun.SHA256.hash((request.headers.get('authorization') ?? '').slice(7), 'hex') as unknown as string)
  if (!caller) return Response.json({ error: { message: 'Unauthorized', type: 'authentication_error' } }, { status: 401 })
  const text = await request.text()
  const body = JSON.parse(text) as { model?: unknown }
  if (body.model !== alias) return Response.json({ error: { message: 'unknown model', type: 'invalid_request_error' } }, { status: 400 })
  requestsByKey.set(caller.id, (requestsByKey.get(caller.id) ?? 0) + 1)
  const controller = new AbortController()
  const overall = setTimeout(() => controller.abort(), 120_000)
  const connect = setTimeout(() => controller.abort(), 10_000)
  const answer = await fetch(`${upstream}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: 'Bearer upstream-key' },
    body: text.replace(quotedAlias, quotedModel),
    signal: controller.signal,
  })
  clearTimeout(connect)
  const answerText = await answer.text()
  clearTimeout(overall)
  const completion = JSON.parse(answerText) as { id: string; usage: { prompt_tokens: number; completion_tokens: number } }
  const id = Bun.randomUUIDv7()
  const ms = Math.round(performance.now() - started)
  const { prompt_tokens, completion_tokens } = completion.usage
  const record = {
    id,
    key_id: caller.id,
    tier: caller.tier,
    alias,
    upstream: 'mock',
    model: UPSTREAM_MODEL,
    status: 200,
    prompt_tokens,
    completion_tokens,
    cost_usd: 0,
    ms,
    response_id: completion.id,
    finish_reasons: ['stop'],
  }
  await Promise.all([
    usageJournal(`${JSON.stringify([caller.id, alias, UPSTREAM_MODEL, prompt_tokens, completion_tokens, Date.now()])}\n`),
    requestJournal(`["${++uid}",${Date.now()},${JSON.stringify(record)}]\n`),
  ])
  accessLog += `{"level":"info","time":"${new Date().toISOString()}",${JSON.stringify({ request_id: id, method: 'POST', path: '/v1/chat/completions', status: 200, ms, key: caller.prefix }).slice(1, -1)}}\n`
  const remaining = String(1_000_000 - requestsByKey.get(caller.id)!)
  return new Response(answerText.replace(quotedModel, quotedAlias), {
    headers: {
      'content-type': 'application/json',
      'x-request-id': id,
      'x-svc-tier': caller.tier,
      'x-ratelimit-limit': '1000000',
      'x-ratelimit-remaining': remaining,
      'x-ratelimit-reset': '60',
      'x-ratelimit-limit-tokens': '1000000000',
      'x-ratelimit-remaining-tokens': '1000000000',
      'x-svc-model': UPSTREAM_MODEL,
      'x-svc-upstream': 'mock',
      'x-svc-attempts': '1',
      'x-svc-cost-usd': '0',
      'x-svc-latency-ms': String(ms),
    },
  })
}

Bun.serve({
  hostname: '127.0.0.1',
  port,
  fetch: (request) => (new URL(request.url).pathname === '/v1/chat/completions' ? complete(request) : new Response('ok')),
})
console.log(`lean floor on http://127.0.0.1:${port}`)

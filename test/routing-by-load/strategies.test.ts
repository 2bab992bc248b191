import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { PROBE_EVERY } from '../../src/routing/load'
import { TargetRouting } from '../../src/routing/target-routing'
import { inProcessGateway, type InProcessGateway, json, tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { fakeUpstream, type FakeUpstream, openaiCompletion } from '../support/upstream'
import { waitFor } from '../support/wait'

setDefaultTimeout(TEST_MS)

/**
 * least_latency and least_busy through the gateway's HTTP path, against two real fake upstreams, on
 * a clock that moves only when the test says: an upstream "takes" its latency by moving the clock
 * before it answers (least_latency), or holds each request until the test releases it at its due
 * time (least_busy, a discrete-event run). No assertion depends on how fast this machine is.
 */

const clock = { now: 0 }

const TIER = `
[tiers.t]
requests_per_minute = 1000000
tokens_per_minute = 1000000000
max_concurrent = 1000
`

/** Held requests wait on the test, not on wall time: no upstream bound may cut them. */
const HELD = 'timeout_ms = 3600000\nconnect_timeout_ms = 3600000\n'

async function gatewayFor(aliases: string, ...upstreams: [string, FakeUpstream][]): Promise<InProcessGateway & { dispose(): Promise<void> }> {
  const dir = tempDir()
  const blocks = upstreams.map(([name, u]) => `[upstreams.${name}]\nkind = "openai"\nbase_url = "${u.url}"\nmax_retries = 0\n${HELD}`).join('\n')
  const config = writeConfig(dir.path, `${TIER}\n[routing]\ndeadline_ms = 3600000\n\n${blocks}\n${aliases}`)
  const gw = await inProcessGateway({ env: { GATEWAY_CONFIG: config } })
  // Attempts are timed on the test's clock.
  gw.gateway.serving.targets = new TargetRouting(undefined, () => clock.now)
  return Object.assign(gw, {
    async dispose() {
      await gw.close()
      dir[Symbol.dispose]()
    },
  })
}

const ask = (gw: InProcessGateway, model: string, content = 'hi') =>
  gw.request('/v1/chat/completions', json({ model, messages: [{ role: 'user', content }] }, { authorization: `Bearer ${gw.key}` }))

describe('least_latency through the gateway', () => {
  const latency = new Map([
    ['fast', 20],
    ['slow', 200],
  ])
  const timed = (name: string) => fakeUpstream((r) => ((clock.now += latency.get(name)!), openaiCompletion(String(r.body.model), name)))
  let fast: FakeUpstream
  let slow: FakeUpstream
  let gw: Awaited<ReturnType<typeof gatewayFor>>
  setup(async () => {
    fast = timed('fast')
    slow = timed('slow')
    gw = await gatewayFor(
      `[aliases."ll/x"]\nstrategy = "least_latency"\ntargets = [{ upstream = "slow", model = "m" }, { upstream = "fast", model = "m" }]\n`,
      ['fast', fast],
      ['slow', slow],
    )
  })
  teardown(async () => {
    await gw.dispose()
    fast.stop()
    slow.stop()
  })

  test('one target 10x slower to its first token: ≥ 90 % of 200 sequential requests after a warm-up of ≤ 20 go to the fast one, the slow one is still probed, and a recovery brings traffic back', async () => {
    const served: string[] = []
    const send = async () => {
      const response = await ask(gw, 'll/x')
      expect(response.status).toBe(200)
      served.push(response.headers.get('x-svc-upstream')!)
    }
    for (let i = 0; i < 200; i++) await send()
    const afterWarmUp = served.slice(20)
    const toFast = afterWarmUp.filter((u) => u === 'fast').length
    expect(toFast / afterWarmUp.length).toBeGreaterThanOrEqual(0.9)
    // Probes: the slow one still gets about one request in 20.
    expect(afterWarmUp.length - toFast).toBeGreaterThanOrEqual(Math.floor(afterWarmUp.length / PROBE_EVERY) - 1)
    expect(slow.requests.length).toBeGreaterThan(1)

    // The slow one recovers, and is now the faster: traffic returns within one probe's turn.
    latency.set('slow', 5)
    served.length = 0
    for (let i = 0; i < 2 * PROBE_EVERY; i++) await send()
    const back = served.indexOf('slow')
    expect(back).toBeGreaterThanOrEqual(0)
    expect(back).toBeLessThan(PROBE_EVERY)
    const since = served.slice(back)
    expect(since.filter((u) => u === 'slow').length).toBeGreaterThanOrEqual(since.length - 2)
  })
})

/** An upstream that holds every request until the test lets it go; it knows when each arrived on the clock. */
function holding(name: string) {
  const held: { name: string; arrivedAt: number; release: () => void }[] = []
  let inFlight = 0
  let most = 0
  const upstream = fakeUpstream(async (r) => {
    inFlight++
    most = Math.max(most, inFlight)
    await new Promise<void>((release) => held.push({ name, arrivedAt: clock.now, release }))
    inFlight--
    return openaiCompletion(String(r.body.model), name)
  })
  return {
    upstream,
    held,
    get inFlight() {
      return inFlight
    },
    get most() {
      return most
    },
  }
}

describe('least_busy through the gateway', () => {
  const duration = { fast: 50, slow: 1000 }
  let fast: ReturnType<typeof holding>
  let slow: ReturnType<typeof holding>
  let gw: Awaited<ReturnType<typeof gatewayFor>>
  setup(async () => {
    fast = holding('fast')
    slow = holding('slow')
    gw = await gatewayFor(
      `[aliases."lb/x"]\nstrategy = "least_busy"\ntargets = [{ upstream = "slow", model = "m" }, { upstream = "fast", model = "m" }]\n`,
      ['fast', fast.upstream],
      ['slow', slow.upstream],
    )
  })
  teardown(async () => {
    for (const u of [fast, slow]) u.held.splice(0).forEach((h) => h.release())
    await gw.dispose()
    fast.upstream.stop()
    slow.upstream.stop()
  })

  test('a target answering in 1 s and one in 50 ms, 50 callers: in-flight counts follow load (in flight × duration), not turns', async () => {
    const answered = { fast: 0, slow: 0 }
    let sent = 0
    const callers: Promise<void>[] = []
    const arrived = () => fast.upstream.requests.length + slow.upstream.requests.length
    /** Lets go of the request due first (its arrival plus its upstream's duration), moving the clock there. */
    const releaseNext = () => {
      const pending = [...fast.held, ...slow.held].map((h) => ({ ...h, due: h.arrivedAt + duration[h.name as 'fast' | 'slow'] }))
      pending.sort((a, b) => a.due - b.due)
      const next = pending[0]!
      clock.now = Math.max(clock.now, next.due)
      const list = next.name === 'fast' ? fast.held : slow.held
      list.splice(
        list.findIndex((h) => h.release === next.release),
        1,
      )
      next.release()
    }
    // Callers share one budget of requests, so all 50 keep one request going until it is spent.
    let budget = 0
    const caller = async () => {
      while (sent < budget) {
        sent++
        const response = await ask(gw, 'lb/x')
        answered[response.headers.get('x-svc-upstream') as 'fast' | 'slow']++
      }
    }
    // Warm-up, one request at a time: each target measured once.
    for (let i = 0; i < 2; i++) {
      budget++
      const one = caller()
      await waitFor(() => arrived() === i + 1, 'the warm-up request to arrive')
      releaseNext()
      await one
    }
    answered.fast = answered.slow = 0
    const total = 2 + 600
    budget = total
    for (let c = 0; c < 50; c++) callers.push(caller())
    let steadySlowMost = 0
    let steadyFastMost = 0
    for (let released = 2; released < total; released++) {
      // Every caller's request is at an upstream before the next one is let go: the run is the same on any machine.
      await waitFor(
        () => arrived() === Math.min(total, released + 50),
        () => `${released + 50} requests at the upstreams (${arrived()} there)`,
      )
      if (released >= 2 + 100) {
        steadySlowMost = Math.max(steadySlowMost, slow.inFlight)
        steadyFastMost = Math.max(steadyFastMost, fast.inFlight)
      }
      releaseNext()
    }
    await Promise.all(callers)
    // By turns, the slow target would hold most of the 50 (its answers take 20x longer); by load, a few.
    expect(steadySlowMost).toBeLessThanOrEqual(3)
    expect(steadyFastMost).toBeGreaterThanOrEqual(45)
    expect(answered.slow / (answered.fast + answered.slow)).toBeLessThan(0.05)
  })
})

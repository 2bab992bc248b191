import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { MemoryTargetLimiter } from '../../src/limits/targets'
import { upstreamHttpError } from '../../src/providers/errors'
import { rateLimitResetMs } from '../../src/providers/rate-limit-reset'
import { CircuitBreakers } from '../../src/routing/circuit'
import { UpstreamConnections } from '../../src/routing/connections'
import { dispatch, type DispatchOptions } from '../../src/routing/dispatch'
import type { SkipReason } from '../../src/routing/gate'
import { PROBE_EVERY, TargetLoad } from '../../src/routing/load'
import type { Alias, Target } from '../../src/routing/table'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

/**
 * Routing by load through dispatch()'s seams: a clock that moves only when the "upstream" says how
 * long it took, a fixed random, and the in-memory limiter of provider limits. Nothing waits for real time.
 */

const settings = { maxRetries: 0, timeoutMs: 60_000, connectTimeoutMs: 60_000, failureThreshold: 1000, cooldownMs: 1000 }
const target = (name: string, limits?: Target['limits']): Target =>
  ({ upstream: { name, ...settings }, model: 'm', weight: 1, ...(limits ? { limits } : {}) }) as unknown as Target
const aliasOf = (strategy: Alias['strategy'], ...targets: Target[]): Alias => ({ name: 'a/x', strategy, targets, model: {} }) as unknown as Alias

function harness() {
  const clock = { now: 1_000_000 }
  const load = new TargetLoad(() => clock.now)
  const limiter = new MemoryTargetLimiter()
  const skips: string[] = []
  const options: DispatchOptions = {
    clientSignal: new AbortController().signal,
    circuits: new CircuitBreakers(),
    connections: new UpstreamConnections(1000),
    deadlineMs: 120_000,
    now: () => clock.now,
    random: () => 0.5,
    sleep: async (ms) => {
      clock.now += ms
    },
    onAttempt: () => {},
    load,
    targetLimiter: limiter,
    onSkip: (t: Target, reason: SkipReason) => skips.push(`${t.upstream.name}:${reason}`),
  }
  return { clock, load, limiter, skips, options }
}

describe('least_latency', () => {
  test('10x slower in time to first token: ≥ 90 % of 200 requests after a warm-up of 2 go to the fast one; the slow one is probed 1 in 20; a recovery brings traffic back at the next probe', async () => {
    const { clock, options, skips } = harness()
    const fast = target('fast')
    const slow = target('slow')
    const alias = aliasOf('least_latency', slow, fast)
    const latency = new Map([
      ['fast', 20],
      ['slow', 200],
    ])
    const served: string[] = []
    const request = async () => {
      const answer = await dispatch(alias, options, async (t) => {
        clock.now += latency.get(t.upstream.name)!
        return t.upstream.name
      })
      answer.finish('ok')
      served.push(answer.value)
    }
    for (let i = 0; i < 200; i++) await request()
    // Warm-up: each target measured once (the unmeasured go first), then the fast one leads.
    expect(served.slice(0, 2)).toEqual(['slow', 'fast'])
    const after = served.slice(2)
    expect(after.filter((s) => s === 'fast').length / after.length).toBeGreaterThanOrEqual(0.9)
    const probes = after.filter((s) => s === 'slow').length
    expect(probes).toBe(Math.floor(200 / PROBE_EVERY))
    // Every request the fast one served passed over the slow one, configured first: logged as `slow`.
    expect(skips.filter((s) => s === 'slow:slow').length).toBe(served.filter((s) => s === 'fast').length)

    // The slow one recovers (now faster than the other): the next probe sees it, and it leads at once.
    latency.set('slow', 5)
    served.length = 0
    for (let i = 0; i < 2 * PROBE_EVERY; i++) await request()
    const firstBack = served.indexOf('slow')
    expect(firstBack).toBeGreaterThanOrEqual(0)
    expect(firstBack).toBeLessThan(PROBE_EVERY)
    const rest = served.slice(firstBack)
    expect(rest.filter((s) => s === 'slow').length).toBeGreaterThanOrEqual(rest.length - 2)
  })
})

describe('least_busy', () => {
  test('one target at 1 s and one at 50 ms, 50 callers at once: in-flight follows load (in flight × duration), not turns', async () => {
    const { clock, options, load } = harness()
    const fast = target('fast')
    const slow = target('slow')
    const alias = aliasOf('least_busy', slow, fast)
    const duration = new Map([
      ['fast', 50],
      ['slow', 1000],
    ])
    // A discrete-event run: every caller keeps one request going; each answer ends at its due time on the clock.
    const due: { at: number; finish: () => void; caller: number }[] = []
    const start = async (caller: number) => {
      const answer = await dispatch(alias, options, async (t) => t.upstream.name)
      due.push({ at: clock.now + duration.get(answer.value)!, finish: () => answer.finish('ok'), caller })
      return answer.value
    }
    // Warm-up, one at a time: both measured.
    for (let i = 0; i < 2; i++) {
      await start(-1)
      const next = due.shift()!
      clock.now = next.at
      next.finish()
    }
    const counts = { fast: 0, slow: 0 }
    let mostSlow = 0
    let mostFast = 0
    for (let caller = 0; caller < 50; caller++) counts[(await start(caller)) as 'fast' | 'slow']++
    for (let ended = 0; ended < 2000; ended++) {
      due.sort((a, b) => a.at - b.at)
      const next = due.shift()!
      clock.now = next.at
      next.finish()
      counts[(await start(next.caller)) as 'fast' | 'slow']++
      mostSlow = Math.max(mostSlow, load.snapshot(slow).inFlight)
      mostFast = Math.max(mostFast, load.snapshot(fast).inFlight)
    }
    // By turns the slow target would hold about 48 of the 50 (its answers take 20x longer); by load, a couple.
    expect(mostSlow).toBeLessThanOrEqual(3)
    expect(mostFast).toBeGreaterThanOrEqual(45)
    expect(counts.slow / (counts.fast + counts.slow)).toBeLessThan(0.01)
    // At every moment the product is balanced: the slow one's in-flight × 1000 never far above the fast one's × 50.
    expect(load.snapshot(slow).inFlight * 1000).toBeLessThanOrEqual((load.snapshot(fast).inFlight + 1) * 50 * 3)
  })

  test('with more than two targets, two distinct ones are drawn and compared; the rest follow as fallbacks', () => {
    const load = new TargetLoad(() => 0)
    const targets = ['a', 'b', 'c', 'd'].map((n) => target(n))
    const alias = aliasOf('least_busy', ...targets)
    const draws = [0.0, 0.0]
    const plan = load.byBusy(alias, () => draws.shift()!)
    expect(plan.targets.map((t) => t.upstream.name)).toEqual(['a', 'b', 'c', 'd'])
    const busy = load.started(targets[0]!, false)
    const drawn = [0.0, 0.0]
    expect(load.byBusy(alias, () => drawn.shift()!).targets.map((t) => t.upstream.name)).toEqual(['b', 'a', 'c', 'd'])
    load.ended(busy, false)
  })
})

describe("providers' own limits", () => {
  test('a target at its rpm is skipped (logged `rpm`) and the next serves; with none left, 429 upstream_capacity with Retry-After', async () => {
    const { clock, options, skips } = harness()
    const capped = target('capped', { rpm: 3, tpm: null })
    const spare = target('spare')
    const both = aliasOf('fallback', capped, spare)
    const served: string[] = []
    for (let i = 0; i < 5; i++) {
      const answer = await dispatch(both, options, async (t) => t.upstream.name)
      answer.finish('ok')
      served.push(answer.value)
    }
    expect(served).toEqual(['capped', 'capped', 'capped', 'spare', 'spare'])
    expect(skips).toEqual(['capped:rpm', 'capped:rpm'])
    const refused = await dispatch(aliasOf('fallback', capped), options, async () => 'never').catch((e: unknown) => e)
    expect(refused).toMatchObject({ type: 'rate_limit_error', details: { code: 'upstream_capacity', retryAfterSeconds: 60 } })
    // The window slides: a minute after the first, one request is free again.
    clock.now += 60_000
    const again = await dispatch(aliasOf('fallback', capped), options, async (t) => t.upstream.name)
    expect(again.value).toBe('capped')
  })

  test('tpm: once an answer spent the target’s tokens, it is skipped as `tpm` until they leave the window', async () => {
    const { clock, options, limiter, skips } = harness()
    const capped = target('capped', { rpm: null, tpm: 100 })
    expect(await limiter.admit('capped/m', capped.limits!, clock.now)).toEqual({ ok: true })
    limiter.charge('capped/m', 150, clock.now)
    const refused = await dispatch(aliasOf('fallback', capped), options, async () => 'never').catch((e: unknown) => e)
    expect(refused).toMatchObject({ details: { code: 'upstream_capacity' } })
    expect(skips).toEqual(['capped:tpm'])
    clock.now += 60_001
    expect((await dispatch(aliasOf('fallback', capped), options, async (t) => t.upstream.name)).value).toBe('capped')
  })

  test('an upstream 429 with retry-after rests the target: the next target serves at once, nothing reaches it until the rest ends', async () => {
    const { clock, options, skips } = harness()
    const limited = target('limited')
    const spare = target('spare')
    const alias = aliasOf('fallback', limited, spare)
    const calls: string[] = []
    let throttle = true
    const call = async (t: Target) => {
      calls.push(t.upstream.name)
      if (t.upstream.name === 'limited' && throttle) {
        throttle = false
        throw upstreamHttpError('limited', 429, new Headers({ 'retry-after': '2' }), '{"error":{"message":"slow down"}}')
      }
      return t.upstream.name
    }
    expect((await dispatch(alias, options, call)).value).toBe('spare')
    expect(calls).toEqual(['limited', 'spare'])
    clock.now += 1999
    expect((await dispatch(alias, options, call)).value).toBe('spare')
    expect(skips).toEqual(['limited:resting'])
    clock.now += 1
    expect((await dispatch(alias, options, call)).value).toBe('limited')
  })

  test('x-ratelimit-reset-*: the limit that ran out decides; OpenAI durations read', () => {
    expect(rateLimitResetMs(new Headers({ 'x-ratelimit-reset-requests': '2s', 'x-ratelimit-reset-tokens': '6m0s' }))).toBe(2000)
    expect(
      rateLimitResetMs(new Headers({ 'x-ratelimit-reset-requests': '20ms', 'x-ratelimit-reset-tokens': '1m2.5s', 'x-ratelimit-remaining-tokens': '0' })),
    ).toBe(62_500)
    expect(rateLimitResetMs(new Headers({ 'x-ratelimit-reset-requests': 'soon' }))).toBeUndefined()
    expect(upstreamHttpError('u', 429, new Headers({ 'x-ratelimit-reset-requests': '2s' }), '{}').retryAfterMs).toBe(2000)
  })
})

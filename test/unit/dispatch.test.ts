import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { connectionLost, upstreamHttpError, type UpstreamError } from '../../src/providers/errors'
import { CircuitBreakers, targetKey } from '../../src/routing/circuit'
import { backoffMs, dispatch, type DispatchOptions } from '../../src/routing/dispatch'
import { UpstreamConnections } from '../../src/routing/connections'
import type { Alias, Target } from '../../src/routing/table'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

/**
 * dispatch() through its seams: a clock that moves only when the test (or a sleep) moves it, a fixed
 * "random", and a sleep that records what it was asked to wait. Nothing here waits for real time.
 */

const settings = { maxRetries: 3, timeoutMs: 60_000, connectTimeoutMs: 60_000, failureThreshold: 1000, cooldownMs: 1000 }
const target = (name: string, overrides: Partial<typeof settings> = {}): Target =>
  ({ upstream: { name, ...settings, ...overrides }, model: 'm', weight: 1 }) as unknown as Target
const aliasOf = (...targets: Target[]): Alias => ({ name: 'a/x', strategy: 'fallback', targets, model: {} }) as unknown as Alias

function harness(deadlineMs = 120_000) {
  const events: string[] = []
  const clock = { now: 0 }
  const circuits = new CircuitBreakers()
  const options: DispatchOptions = {
    clientSignal: new AbortController().signal,
    circuits,
    connections: new UpstreamConnections(10),
    deadlineMs,
    now: () => clock.now,
    random: () => 0.5,
    sleep: async (ms) => {
      events.push(`sleep ${ms}`)
      clock.now += ms
    },
    onAttempt: (t, attempt) => events.push(`${t.upstream.name} ${attempt}`),
  }
  return { events, clock, circuits, options }
}

/** An attempt that fails with the given errors in turn, then answers "ok". */
const failing = (...errors: UpstreamError[]) => {
  let calls = 0
  return async () => {
    const error = errors[calls++]
    if (error) throw error
    return 'ok'
  }
}

const http500 = (name = 'u') => upstreamHttpError(name, 500, new Headers(), '{"error":{"message":"boom"}}')

describe('dispatch', () => {
  test('backoff: exponential, half fixed and half jitter, capped at 5 s', () => {
    const error = connectionLost('u', 'reset')
    expect([0, 1, 2, 3, 4, 5, 6, 10].map((retry) => backoffMs(retry, error, () => 0.5))).toEqual([75, 150, 300, 600, 1200, 2400, 3750, 3750])
    expect(backoffMs(0, error, () => 0)).toBe(50)
    expect(backoffMs(0, error, () => 1)).toBe(100)
  })

  test('retries the same target with the backoff sequence, then answers', async () => {
    const { events, options } = harness()
    const served = await dispatch(aliasOf(target('u')), options, failing(http500(), http500(), http500()))
    served.finish('ok')
    expect(served.value).toBe('ok')
    expect(events).toEqual(['u 1', 'sleep 75', 'u 2', 'sleep 150', 'u 3', 'sleep 300', 'u 4'])
  })

  test('max_retries spent: fails over to the next target without sleeping', async () => {
    const { events, options } = harness()
    let calls = 0
    const served = await dispatch(aliasOf(target('a', { maxRetries: 1 }), target('b')), options, async (t) => {
      calls++
      if (t.upstream.name === 'a') throw http500('a')
      return t.upstream.name
    })
    served.finish('ok')
    expect(served.value).toBe('b')
    expect(calls).toBe(3)
    expect(events).toEqual(['a 1', 'sleep 75', 'a 2', 'b 3'])
  })

  test("an upstream's short retry-after replaces the backoff; a long one is not waited for", async () => {
    const slowDown = (ms: number) => upstreamHttpError('u', 429, new Headers({ 'retry-after-ms': String(ms) }), '{}')
    const short = harness()
    ;(await dispatch(aliasOf(target('u')), short.options, failing(slowDown(60), slowDown(60)))).finish('ok')
    expect(short.events).toEqual(['u 1', 'sleep 60', 'u 2', 'sleep 60', 'u 3'])

    // 20 s is past what is honoured: no retry of the same target, the next one is tried at once.
    const long = harness()
    let calls = 0
    const served = await dispatch(aliasOf(target('u'), target('v')), long.options, async (t) => {
      if (calls++ === 0) throw slowDown(20_000)
      return t.upstream.name
    })
    served.finish('ok')
    expect(long.events).toEqual(['u 1', 'v 2'])
  })

  test('the deadline: no backoff that would pass it, and no attempt once it has passed', async () => {
    // 200 ms: attempt 1 fails, 75 ms of backoff fits, attempt 2 fails, 150 ms would not fit.
    const { events, options } = harness(200)
    const failure = await dispatch(aliasOf(target('u')), options, failing(http500(), http500(), http500())).catch((error: unknown) => error)
    expect(events).toEqual(['u 1', 'sleep 75', 'u 2'])
    expect(failure).toMatchObject({ type: 'upstream_error', code: 'upstream_http_error' })

    // An attempt that itself used up the deadline: the next target is not started.
    const spent = harness(1000)
    const late = await dispatch(aliasOf(target('a', { maxRetries: 0 }), target('b')), spent.options, async () => {
      spent.clock.now += 1000
      throw http500('a')
    }).catch((error: unknown) => error)
    expect(spent.events).toEqual(['a 1'])
    expect(late).toMatchObject({ type: 'timeout_error', code: 'upstream_timeout' })
  })

  test('circuit: opens at the threshold, is skipped while open, then lets exactly one probe through', async () => {
    const { events, clock, circuits, options } = harness()
    const breaking = target('u', { maxRetries: 0, failureThreshold: 2, cooldownMs: 1000 })
    const alias = aliasOf(breaking)
    const key = targetKey(breaking)
    for (let i = 0; i < 2; i++) await dispatch(alias, options, failing(http500())).catch(() => {})
    expect(circuits.state(key, breaking.upstream, clock.now)).toBe('open')

    // Open: the upstream is not called, and the caller is told when to come back.
    let called = false
    const refused = await dispatch(alias, options, async () => (called = true)).catch((error: unknown) => error)
    expect(called).toBe(false)
    expect(refused).toMatchObject({ type: 'overloaded_error', code: 'circuit_open', details: { retryAfterSeconds: 1 } })

    // Half-open after the cooldown: one probe at a time; a second request meanwhile is refused.
    clock.now += 1000
    events.length = 0
    const probe = await dispatch(alias, options, async () => 'probe')
    const meanwhile = await dispatch(alias, options, async () => 'second').catch((error: unknown) => error)
    expect(meanwhile).toMatchObject({ code: 'circuit_open' })
    probe.finish('ok')
    expect(circuits.state(key, breaking.upstream, clock.now)).toBe('closed')
    expect(events).toEqual(['u 1'])

    // A probe that fails opens the circuit again at once.
    for (let i = 0; i < 2; i++) await dispatch(alias, options, failing(http500())).catch(() => {})
    clock.now += 1000
    await dispatch(alias, options, failing(http500())).catch(() => {})
    expect(circuits.state(key, breaking.upstream, clock.now)).toBe('open')
  })

  test('a request the upstream calls bad is not retried, and leaves the circuit closed', async () => {
    const { events, circuits, options } = harness()
    const t = target('u', { failureThreshold: 1 })
    const bad = upstreamHttpError('u', 400, new Headers(), '{"error":{"message":"bad"}}')
    const failure = await dispatch(aliasOf(t), options, failing(bad)).catch((error: unknown) => error)
    expect(failure).toBe(bad)
    expect(events).toEqual(['u 1'])
    expect(circuits.state(targetKey(t), t.upstream, 0)).toBe('closed')
  })
})

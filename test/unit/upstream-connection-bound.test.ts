import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { GatewayError } from '../../src/errors'
import { GatewayMetrics } from '../../src/observe/metrics'
import { connectionLost, upstreamHttpError } from '../../src/providers/errors'
import { CircuitBreakers, targetKey } from '../../src/routing/circuit'
import { MAX_UPSTREAM_CONNECTIONS, RUNTIME_FETCH_CAP_MAX, runtimeFetchCap, UpstreamConnections } from '../../src/routing/connections'
import { dispatch, type DispatchOptions } from '../../src/routing/dispatch'
import type { Alias, RoutingTable, Target } from '../../src/routing/table'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

/**
 * Issue 23: an instance served at most 256 upstream requests at a time (Bun's own cap on concurrent
 * fetches) and the rest waited until their connect timeout failed them. Now dispatch takes one of the
 * instance's `[http] max_upstream_connections` for each attempt, gives it back exactly once when the
 * attempt ends, whichever way it ends, and refuses with 503 at once when none is free.
 */

const settings = { maxRetries: 2, timeoutMs: 60_000, connectTimeoutMs: 60_000, failureThreshold: 1, cooldownMs: 1000 }
const target = (name: string, overrides: Partial<typeof settings> = {}): Target =>
  ({ upstream: { name, ...settings, ...overrides }, model: 'm', weight: 1 }) as unknown as Target
const aliasOf = (...targets: Target[]): Alias => ({ name: 'a/x', strategy: 'fallback', targets, model: {} }) as unknown as Alias

function harness(limit = 4) {
  const clock = { now: 0 }
  const client = new AbortController()
  const connections = new UpstreamConnections(limit)
  const circuits = new CircuitBreakers()
  const options: DispatchOptions = {
    clientSignal: client.signal,
    circuits,
    connections,
    deadlineMs: 120_000,
    now: () => clock.now,
    random: () => 0.5,
    sleep: async (ms) => {
      clock.now += ms
    },
    onAttempt: () => {},
  }
  return { clock, client, connections, circuits, options }
}

const http500 = () => upstreamHttpError('u', 500, new Headers(), '{"error":{"message":"boom"}}')
const http400 = () => upstreamHttpError('u', 400, new Headers(), '{"error":{"message":"bad"}}')

describe('an attempt holds one upstream connection, given back exactly once', () => {
  test('while the answer is relayed, and back when it is finished, whatever the outcome, however often finish is called', async () => {
    for (const outcome of ['ok', 'failed', 'abandoned'] as const) {
      const { connections, options } = harness()
      const served = await dispatch(aliasOf(target('u')), options, async () => 'answer')
      expect(connections.inUse).toBe(1)
      served.finish(outcome)
      served.finish(outcome)
      served.finish('ok')
      expect(connections.inUse).toBe(0)
    }
  })

  test('a failed attempt gives its connection back before the retry takes one', async () => {
    const { connections, options } = harness()
    const seen: number[] = []
    let calls = 0
    const served = await dispatch(aliasOf(target('u', { failureThreshold: 10 })), options, async () => {
      seen.push(connections.inUse)
      if (calls++ < 2) throw connectionLost('u', 'reset')
      return 'ok'
    })
    expect(seen).toEqual([1, 1, 1])
    served.finish('ok')
    expect(connections.inUse).toBe(0)
  })

  test('every failure that ends the dispatch gives the connection back', async () => {
    const failures: [string, () => unknown][] = [
      ['retries spent', http500],
      ['a bad request', http400],
      ['a thrown error of our own', () => new Error('a bug')],
    ]
    for (const [what, error] of failures) {
      const { connections, options } = harness()
      const failed = await dispatch(aliasOf(target('u')), options, async () => {
        throw error()
      }).catch((e: unknown) => e)
      expect(failed, what).toBeInstanceOf(Error)
      expect(connections.inUse, what).toBe(0)
    }
  })

  test('the caller leaving mid-attempt gives the connection back', async () => {
    const { client, connections, options } = harness()
    const failed = dispatch(aliasOf(target('u')), options, (_t, attempt) => {
      return new Promise((_resolve, reject) => attempt.signal.addEventListener('abort', () => reject(attempt.signal.reason)))
    }).catch((e: unknown) => e)
    expect(connections.inUse).toBe(1)
    client.abort()
    expect(((await failed) as GatewayError).code).toBe('client_closed')
    expect(connections.inUse).toBe(0)
  })
})

describe('no connection free', () => {
  test('refused at once with 503 upstream_connection_limit and Retry-After 1: no attempt, no failover, no circuit verdict', async () => {
    const { connections, circuits, options } = harness(1)
    const held = await dispatch(aliasOf(target('a')), options, async () => 'held')
    const tried: string[] = []
    const refused = (await dispatch(aliasOf(target('a'), target('b')), options, async (t) => {
      tried.push(t.upstream.name)
      return 'never'
    }).catch((e: unknown) => e)) as GatewayError
    expect(refused).toBeInstanceOf(GatewayError)
    expect(refused.type).toBe('overloaded_error')
    expect(refused.code).toBe('upstream_connection_limit')
    expect(refused.details.retryAfterSeconds).toBe(1)
    expect(tried).toEqual([])
    // failureThreshold is 1: one counted failure would have opened it.
    expect(circuits.state(targetKey(target('a')), settings, 0)).toBe('closed')
    expect(connections.inUse).toBe(1)
    held.finish('ok')
    const again = await dispatch(aliasOf(target('a')), options, async () => 'again')
    expect(again.value).toBe('again')
    again.finish('ok')
    expect(connections.inUse).toBe(0)
  })

  test('a refused half-open probe leaves the probe to the next request', async () => {
    const { clock, connections, circuits, options } = harness(1)
    const key = targetKey(target('u'))
    circuits.failure(key, settings, clock.now)
    clock.now += settings.cooldownMs
    connections.acquire()
    await expect(dispatch(aliasOf(target('u')), options, async () => 'never')).rejects.toMatchObject({ code: 'upstream_connection_limit' })
    connections.release()
    expect(circuits.tryAcquire(key, settings, clock.now)).toBe(true)
  })
})

describe("the runtime's cap follows the bound", () => {
  test('the cap has room above the bound, and stops at what Bun can read (16 bits)', () => {
    expect(runtimeFetchCap(10_000)).toBe(10_256)
    expect(runtimeFetchCap(1)).toBe(257)
    expect(runtimeFetchCap(1_000_000)).toBe(RUNTIME_FETCH_CAP_MAX)
    expect(new UpstreamConnections(1_000_000).limit).toBe(MAX_UPSTREAM_CONNECTIONS)
    expect(runtimeFetchCap(MAX_UPSTREAM_CONNECTIONS)).toBe(RUNTIME_FETCH_CAP_MAX)
  })

  test('chatgate_upstream_connections shows the open upstream requests at scrape time', () => {
    const connections = new UpstreamConnections(5)
    const routing = { aliases: new Map() } as unknown as RoutingTable
    const metrics = new GatewayMetrics({ routing: () => routing, circuits: new CircuitBreakers(), connections, now: () => 0 })
    const gauge = () => metrics.samples().find((s) => s.name === 'chatgate_upstream_connections')?.value
    expect(gauge()).toBe(0)
    connections.acquire()
    connections.acquire()
    expect(gauge()).toBe(2)
    expect(metrics.text()).toContain('# TYPE chatgate_upstream_connections gauge\nchatgate_upstream_connections 2\n')
  })
})

import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { CircuitBreakers } from './routing/circuit'
import { targetKey } from './routing/dispatch'
import type { RoutingTable } from './routing/table'

/**
 * Label-value lookups cached per combination: prom-client hashes a label object on every call,
 * which shows in a profile at thousands of requests a second; a child is resolved once instead.
 */
function childrenOf<C>(metric: { labels(...values: string[]): C }): (...values: string[]) => C {
  const children = new Map<string, C>()
  return (...values) => {
    const key = values.join('\u0000')
    let child = children.get(key)
    if (child === undefined) {
      child = metric.labels(...values)
      children.set(key, child)
    }
    return child
  }
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]
const CIRCUIT_VALUE = { closed: 0, half_open: 1, open: 2 } as const

/** Every metric the gateway exports, in its own registry (prefix `chatgate_`). */
export class GatewayMetrics {
  readonly registry = new Registry()
  readonly requests: Counter<'alias' | 'upstream' | 'status'>
  readonly requestDuration: Histogram<'alias'>
  readonly overhead: Histogram
  readonly upstreamDuration: Histogram<'upstream'>
  readonly ttfb: Histogram<'alias'>
  readonly tokens: Counter<'alias' | 'direction'>
  readonly refusals: Counter<'reason'>
  readonly attempts: Counter<'upstream' | 'outcome'>
  readonly retries: Counter<'upstream'>
  readonly fallbacks: Counter<'alias'>
  readonly inFlight: Gauge
  /** Cached children, label values in the order of each metric's `labelNames`. */
  readonly requestsBy
  readonly requestDurationBy
  readonly upstreamDurationBy
  readonly ttfbBy
  readonly tokensBy

  constructor(state: { routing: () => RoutingTable; circuits: CircuitBreakers; now: () => number }) {
    const registers = [this.registry]
    this.requests = new Counter({
      name: 'chatgate_requests_total',
      help: 'Requests by alias, upstream and status class (2xx, 4xx, 5xx)',
      labelNames: ['alias', 'upstream', 'status'],
      registers,
    })
    this.requestDuration = new Histogram({
      name: 'chatgate_request_duration_seconds',
      help: 'Time from request to the last byte of the response, in the gateway',
      labelNames: ['alias'],
      buckets: LATENCY_BUCKETS,
      registers,
    })
    this.overhead = new Histogram({
      name: 'chatgate_gateway_overhead_seconds',
      help: 'Time a non-streaming completion spent in the gateway itself, upstream time excluded',
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
      registers,
    })
    this.upstreamDuration = new Histogram({
      name: 'chatgate_upstream_duration_seconds',
      help: 'Time spent waiting on upstreams for one request, all attempts',
      labelNames: ['upstream'],
      buckets: LATENCY_BUCKETS,
      registers,
    })
    this.ttfb = new Histogram({
      name: 'chatgate_ttfb_seconds',
      help: 'Streams: time to the first byte sent to the caller',
      labelNames: ['alias'],
      buckets: LATENCY_BUCKETS,
      registers,
    })
    this.tokens = new Counter({
      name: 'chatgate_tokens_total',
      help: 'Tokens by alias and direction (prompt, completion)',
      labelNames: ['alias', 'direction'],
      registers,
    })
    this.refusals = new Counter({
      name: 'chatgate_ratelimit_refusals_total',
      help: 'Requests refused by a limit: requests, tokens, concurrency, quota',
      labelNames: ['reason'],
      registers,
    })
    this.attempts = new Counter({
      name: 'chatgate_upstream_attempts_total',
      help: 'Upstream attempts by outcome (success or an error code)',
      labelNames: ['upstream', 'outcome'],
      registers,
    })
    this.retries = new Counter({ name: 'chatgate_retries_total', help: 'Attempts that retried the same target', labelNames: ['upstream'], registers })
    this.fallbacks = new Counter({ name: 'chatgate_fallbacks_total', help: 'Attempts that moved on to another target', labelNames: ['alias'], registers })
    this.inFlight = new Gauge({ name: 'chatgate_in_flight_requests', help: 'Chat completions in flight', registers })
    this.requestsBy = childrenOf(this.requests)
    this.requestDurationBy = childrenOf(this.requestDuration)
    this.upstreamDurationBy = childrenOf(this.upstreamDuration)
    this.ttfbBy = childrenOf(this.ttfb)
    this.tokensBy = childrenOf(this.tokens)
    new Gauge({
      name: 'chatgate_circuit_state',
      help: 'Circuit state per target: 0 closed, 1 half open, 2 open',
      labelNames: ['upstream', 'model'],
      registers,
      collect() {
        this.reset()
        const now = state.now()
        const seen = new Set<string>()
        for (const alias of state.routing().aliases.values()) {
          for (const target of alias.targets) {
            const key = targetKey(target)
            if (seen.has(key)) continue
            seen.add(key)
            this.set({ upstream: target.upstream.name, model: target.model }, CIRCUIT_VALUE[state.circuits.state(key, target.upstream, now)])
          }
        }
      },
    })
  }

  text(): Promise<string> {
    return this.registry.metrics()
  }

  get contentType(): string {
    return this.registry.contentType
  }
}

import { type CircuitBreakers, targetKey } from '../routing/circuit'
import type { RoutingTable } from '../routing/table'

/**
 * Prometheus metrics, kept in plain numbers and written out in the text format (0.0.4) at scrape
 * time. Hand-rolled rather than prom-client: prom-client hashes a label object on every update and
 * cost about a tenth of the gateway's throughput in `bun run bench`; here a label set resolves to
 * its series through nested maps of label values, with no string built per update.
 */

const escapeLabel = (value: string) => value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')

/** One sample as `/metrics` shows it: for tests and tools that want numbers, not text. */
export interface MetricSample {
  name: string
  labels: Record<string, string>
  value: number
}

abstract class Family<S> {
  private readonly root = new Map<string, unknown>()
  private readonly all: { values: string[]; series: S }[] = []

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}

  protected abstract create(): S
  abstract readonly type: string
  protected abstract samples(series: S, labels: Record<string, string>, out: MetricSample[]): void

  /** The series for these label values, in the order of `labelNames`. */
  labels(...values: string[]): S {
    let node: Map<string, unknown> = this.root
    for (let i = 0; i < values.length - 1; i++) {
      let next = node.get(values[i]!) as Map<string, unknown> | undefined
      if (next === undefined) node.set(values[i]!, (next = new Map()))
      node = next
    }
    const last = values.length === 0 ? '' : values[values.length - 1]!
    let series = node.get(last) as S | undefined
    if (series === undefined) {
      series = this.create()
      node.set(last, series)
      this.all.push({ values, series })
    }
    return series
  }

  /** Forgets every series (gauges recomputed at each scrape). */
  reset(): void {
    this.root.clear()
    this.all.length = 0
  }

  collect(out: MetricSample[]): void {
    for (const { values, series } of this.all) {
      this.samples(series, Object.fromEntries(this.labelNames.map((name, i) => [name, values[i]!])), out)
    }
  }
}

/** A family whose series are single numbers. */
abstract class ValueFamily extends Family<{ value: number }> {
  protected create() {
    return { value: 0 }
  }
  protected samples(series: { value: number }, labels: Record<string, string>, out: MetricSample[]) {
    out.push({ name: this.name, labels, value: series.value })
  }
}

export class Counter extends ValueFamily {
  readonly type = 'counter'
  inc(...values: string[]): void {
    this.labels(...values).value++
  }
}

export class Gauge extends ValueFamily {
  readonly type = 'gauge'
}

interface HistogramSeries {
  /** Per bucket, not cumulative; the last one is +Inf. */
  counts: Float64Array
  sum: number
  count: number
  observe(value: number): void
}

export class Histogram extends Family<HistogramSeries> {
  readonly type = 'histogram'

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly buckets: readonly number[],
  ) {
    super(name, help, labelNames)
  }

  protected create(): HistogramSeries {
    const bounds = this.buckets
    const series: HistogramSeries = {
      counts: new Float64Array(bounds.length + 1),
      sum: 0,
      count: 0,
      observe(value) {
        let i = 0
        while (i < bounds.length && value > bounds[i]!) i++
        series.counts[i]!++
        series.sum += value
        series.count++
      },
    }
    return series
  }

  protected samples(series: HistogramSeries, labels: Record<string, string>, out: MetricSample[]) {
    let cumulative = 0
    for (let i = 0; i <= this.buckets.length; i++) {
      cumulative += series.counts[i]!
      out.push({ name: `${this.name}_bucket`, labels: { ...labels, le: i < this.buckets.length ? String(this.buckets[i]) : '+Inf' }, value: cumulative })
    }
    out.push({ name: `${this.name}_sum`, labels, value: series.sum })
    out.push({ name: `${this.name}_count`, labels, value: series.count })
  }
}

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]
const CIRCUIT_VALUE = { closed: 0, half_open: 1, open: 2 } as const

/** What the gauges read at scrape time. */
export interface MetricsState {
  routing: () => RoutingTable
  circuits: CircuitBreakers
  /** The instance's open upstream requests; without it, `chatgate_upstream_connections` is not exported. */
  connections?: { readonly inUse: number }
  now: () => number
}

/** Every metric the gateway exports (prefix `chatgate_`). Label values go in the order of each metric's label names. */
export class GatewayMetrics {
  readonly requests = new Counter('chatgate_requests_total', 'Requests by alias, upstream and status class (2xx, 4xx, 5xx; 401 on its own)', [
    'alias',
    'upstream',
    'status',
  ])
  readonly requestDuration = new Histogram(
    'chatgate_request_duration_seconds',
    'Time from request to the last byte of the response, in the gateway',
    ['alias'],
    LATENCY_BUCKETS,
  )
  readonly overhead = new Histogram(
    'chatgate_gateway_overhead_seconds',
    'Time a non-streaming completion spent in the gateway itself, upstream time excluded',
    [],
    [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
  )
  readonly upstreamDuration = new Histogram(
    'chatgate_upstream_duration_seconds',
    'Time spent waiting on upstreams for one request, all attempts',
    ['upstream'],
    LATENCY_BUCKETS,
  )
  readonly ttfb = new Histogram('chatgate_ttfb_seconds', 'Streams: time to the first byte sent to the caller', ['alias'], LATENCY_BUCKETS)
  readonly ttft = new Histogram(
    'chatgate_ttft_seconds',
    'Streams: time from the request to the first events of the upstream that served it, retries included',
    ['alias', 'upstream'],
    LATENCY_BUCKETS,
  )
  readonly outputTokensPerSecond = new Histogram(
    'chatgate_output_tokens_per_second',
    'Output tokens over generation time: after the first event for streams, the answering attempt for JSON',
    ['alias', 'upstream'],
    [1, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000, 2500],
  )
  readonly droppedFields = new Counter('chatgate_dropped_fields_total', 'Request fields left out for the target that served (as named in x-svc-dropped)', [
    'field',
  ])
  readonly cacheRequests = new Counter('chatgate_cache_requests_total', 'Response cache verdicts by alias: hit, miss, bypass', ['alias', 'result'])
  readonly cacheSaved = new Counter('chatgate_cache_saved_usd_total', 'Spend in USD that cache hits saved, by alias', ['alias'])
  private readonly otelSpansDroppedCounter = new Counter(
    'chatgate_otel_spans_dropped_total',
    'Trace spans that never reached the collector: its queue was full, or the export failed',
    [],
  )
  /** The dropped-spans counter's one series. */
  readonly otelSpansDropped = this.otelSpansDroppedCounter.labels()
  readonly tokens = new Counter('chatgate_tokens_total', 'Tokens by alias and direction (prompt, completion)', ['alias', 'direction'])
  readonly cost = new Counter('chatgate_cost_usd_total', 'Spend in USD by alias and upstream: the exact cost of each request', ['alias', 'upstream'])
  readonly refusals = new Counter('chatgate_ratelimit_refusals_total', 'Requests refused by a limit: requests, tokens, concurrency, quota, budget', ['reason'])
  readonly attempts = new Counter('chatgate_upstream_attempts_total', 'Upstream attempts by outcome (success or an error code)', ['upstream', 'outcome'])
  readonly retries = new Counter('chatgate_retries_total', 'Attempts that retried the same target', ['upstream'])
  readonly fallbacks = new Counter('chatgate_fallbacks_total', 'Attempts that moved on to another target', ['alias'])
  readonly keyCacheReloads = new Counter('chatgate_key_cache_reloads_total', 'Reloads of the in-memory key table, after another process changed a key', [])
  private readonly inFlightGauge = new Gauge('chatgate_in_flight_requests', 'Chat completions in flight', [])
  /** The in-flight gauge's one series: `value++` and `value--`. */
  readonly inFlight = this.inFlightGauge.labels()
  private readonly circuitState = new Gauge('chatgate_circuit_state', 'Circuit state per target: 0 closed, 1 half open, 2 open', ['upstream', 'model'])
  private readonly upstreamConnections = new Gauge(
    'chatgate_upstream_connections',
    'Upstream requests open now, bounded by [http] max_upstream_connections',
    [],
  )
  private readonly families: Family<unknown>[]

  constructor(private readonly state: MetricsState) {
    this.families = [
      this.requests,
      this.requestDuration,
      this.overhead,
      this.upstreamDuration,
      this.ttfb,
      this.ttft,
      this.outputTokensPerSecond,
      this.tokens,
      this.cost,
      this.refusals,
      this.attempts,
      this.retries,
      this.fallbacks,
      this.keyCacheReloads,
      this.droppedFields,
      this.cacheRequests,
      this.cacheSaved,
      this.otelSpansDroppedCounter,
      this.inFlightGauge,
      this.circuitState,
      ...(state.connections ? [this.upstreamConnections] : []),
    ] as Family<unknown>[]
  }

  /** Read at scrape time: circuit states from the breakers, for the routing table in force then; open upstream requests. */
  private collectLive(): void {
    if (this.state.connections) this.upstreamConnections.labels().value = this.state.connections.inUse
    this.circuitState.reset()
    const now = this.state.now()
    for (const alias of this.state.routing().aliases.values()) {
      for (const target of alias.targets) {
        const series = this.circuitState.labels(target.upstream.name, target.model)
        series.value = CIRCUIT_VALUE[this.state.circuits.state(targetKey(target), target.upstream, now)]
      }
    }
  }

  /** Every sample, as the text format lists them. */
  samples(): MetricSample[] {
    this.collectLive()
    const out: MetricSample[] = []
    for (const family of this.families) family.collect(out)
    return out
  }

  /** The Prometheus text exposition. */
  text(): string {
    this.collectLive()
    let text = ''
    const out: MetricSample[] = []
    for (const family of this.families) {
      text += `# HELP ${family.name} ${family.help}\n# TYPE ${family.name} ${family.type}\n`
      out.length = 0
      family.collect(out)
      for (const sample of out) {
        const labels = Object.entries(sample.labels)
        text += `${sample.name}${labels.length === 0 ? '' : `{${labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`} ${sample.value}\n`
      }
    }
    return text
  }

  readonly contentType = 'text/plain; version=0.0.4; charset=utf-8'
}

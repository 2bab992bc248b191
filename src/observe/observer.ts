import type { GatewayError } from '../errors'
import { atMostEvery, type Logger } from '../log'
import { usd } from '../spend/price'
import type { GatewayMetrics } from './metrics'
import type { RequestRecord } from './request-record'
import { startTracing } from './tracing/tracing'
import type { Tracing } from './tracing/types'

const STATUS_CLASS = ['', '1xx', '2xx', '3xx', '4xx', '5xx']

/** Paths polled by machines: logged at debug level only and not traced, so they do not drown the requests. */
const QUIET_PATHS = new Set(['/health', '/metrics'])

/** Refusals logged as one summary line per second (per status), not a line each: a flood of them cannot flood the log. */
const SUMMARIZED_STATUSES = new Set([401, 429])
const SUMMARY_INTERVAL_MS = 1000
/** At most this many key prefixes are named in a summary of 429s. */
const SUMMARY_KEYS = 10
/** Dropped trace spans are counted each; the warning about them comes at most this often. */
const DROPPED_SPANS_WARNING_MS = 10_000

/**
 * How long the answer took to generate, in seconds: a stream from its first events to its end, a
 * JSON answer the attempt that gave it. 0 when unknown.
 */
function generationSeconds(record: RequestRecord, seconds: number): number {
  if (record.ttfbMs !== undefined) return seconds - record.ttfbMs / 1000
  const last = record.attemptLog?.at(-1)
  return last?.endMs === undefined ? 0 : (last.endMs - last.startMs) / 1000
}

/**
 * Told of every finished request, once, after its metrics (traces, the request log). Must not throw
 * and must not wait: anything slow is queued by the listener itself.
 */
export type FinishListener = (record: RequestRecord, status: number, error: GatewayError | undefined) => void

interface RefusalCounts {
  count: number
  /** By key prefix (429s); none for 401s, which have no valid key. */
  keys: Map<string, number>
}

/**
 * Ends a request's observation: one JSON log line and its metrics. Called exactly once per request,
 * by the conventions plugin, or by a stream when it ends. Never logs keys or message content (the
 * latter only with LOG_LEVEL=debug and GATEWAY_LOG_BODIES=1).
 */
export class RequestObserver {
  private refusals = new Map<number, RefusalCounts>()
  private summaryTimer: Timer | null = null
  private readonly listeners: FinishListener[] = []
  private tracing: Tracing | null = null

  constructor(
    private readonly log: Logger,
    readonly metrics: GatewayMetrics,
    private readonly logBodies: boolean,
  ) {}

  /** Opens a request's trace as it arrives (tracing on); its spans end when the request finishes. */
  begin(record: RequestRecord, request: Request): void {
    // Health checks and scrapes are not traced: they would drown the requests in the trace store.
    if (this.tracing !== null && !QUIET_PATHS.has(record.path)) this.tracing.begin(record, request)
  }

  /** An observer, tracing when the environment asks for it (an OTLP endpoint): the SDK is loaded only then. */
  static async start(log: Logger, metrics: GatewayMetrics, logBodies: boolean, vars: Readonly<Record<string, string | undefined>>, version: string) {
    const observer = new RequestObserver(log, metrics, logBodies)
    await observer.startTracing(vars, version)
    return observer
  }

  private async startTracing(vars: Readonly<Record<string, string | undefined>>, version: string): Promise<void> {
    const mayWarn = atMostEvery(DROPPED_SPANS_WARNING_MS)
    const tracing = await startTracing(vars, {
      version,
      dropped: (count, reason) => {
        this.metrics.otelSpansDropped.value += count
        if (mayWarn()) this.log.warn({ count, reason }, 'trace spans dropped: the collector is down, slow or refusing them (requests are not affected)')
      },
    })
    if (tracing === null) return
    this.tracing = tracing
    this.onFinish((record, status, error) => tracing.finish(record, status, error))
  }

  /** Sends the spans still queued (within a bound) and stops tracing. */
  async stopTracing(): Promise<void> {
    await this.tracing?.shutdown()
    this.tracing = null
  }

  /** Adds a listener told of every finished request. */
  onFinish(listener: FinishListener): void {
    this.listeners.push(listener)
  }

  /** Counts a refusal for the next summary line, and schedules that line. */
  private countRefusal(status: number, record: RequestRecord): void {
    let counts = this.refusals.get(status)
    if (!counts) this.refusals.set(status, (counts = { count: 0, keys: new Map() }))
    counts.count++
    const key = record.keyPrefix
    if (key !== undefined && (counts.keys.has(key) || counts.keys.size < SUMMARY_KEYS)) counts.keys.set(key, (counts.keys.get(key) ?? 0) + 1)
    if (this.summaryTimer === null) {
      this.summaryTimer = setTimeout(() => this.summarize(), SUMMARY_INTERVAL_MS)
      this.summaryTimer.unref()
    }
  }

  /** One line per refused status with its count over the last second. */
  summarize(): void {
    this.summaryTimer = null
    const refusals = this.refusals
    this.refusals = new Map()
    for (const [status, { count, keys }] of refusals) {
      const fields: Record<string, unknown> = { status, count, window_s: SUMMARY_INTERVAL_MS / 1000 }
      if (keys.size > 0) fields.key_prefixes = Object.fromEntries(keys)
      this.log.info(fields, 'requests refused')
    }
  }

  finish(record: RequestRecord, status: number, error?: GatewayError): void {
    if (record.finished) return
    record.finished = true
    const seconds = (performance.now() - record.start) / 1000
    const alias = record.alias ?? ''
    const upstream = record.upstream ?? ''
    const m = this.metrics
    // A 401 is counted on its own: a flood of bad keys shows as such, since it is not logged line by line.
    m.requests.inc(alias, upstream, status === 401 ? '401' : (STATUS_CLASS[Math.floor(status / 100)] ?? 'other'))
    m.requestDuration.labels(alias).observe(seconds)
    if (record.upstreamMs !== undefined) {
      m.upstreamDuration.labels(upstream).observe(record.upstreamMs / 1000)
      if (record.ttfbMs === undefined) m.overhead.labels().observe(Math.max(0, seconds - record.upstreamMs / 1000))
    }
    if (record.ttfbMs !== undefined) {
      m.ttfb.labels(alias).observe(record.ttfbMs / 1000)
      m.ttft.labels(alias, upstream).observe(record.ttfbMs / 1000)
    }
    if (record.promptTokens) m.tokens.labels(alias, 'prompt').value += record.promptTokens
    if (record.completionTokens) {
      m.tokens.labels(alias, 'completion').value += record.completionTokens
      const generating = generationSeconds(record, seconds)
      if (generating > 0 && !record.usageEstimated) m.outputTokensPerSecond.labels(alias, upstream).observe(record.completionTokens / generating)
    }
    if (record.costNanos) m.cost.labels(alias, upstream).value += record.costNanos / 1e9
    if (record.dropped) for (const field of record.dropped) m.droppedFields.inc(field)
    if (record.cache !== undefined) m.cacheRequests.inc(alias, record.cache)
    if (record.cacheSavedNanos) m.cacheSaved.labels(alias).value += record.cacheSavedNanos / 1e9
    for (const listener of this.listeners) listener(record, status, error)

    if (SUMMARIZED_STATUSES.has(status)) return this.countRefusal(status, record)
    const level = QUIET_PATHS.has(record.path) ? 'debug' : status >= 500 ? 'warn' : 'info'
    if (!this.log.isLevelEnabled(level)) return
    const line: Record<string, unknown> = {
      request_id: record.id,
      method: record.method,
      path: record.path,
      status,
      latency_ms: Math.round(seconds * 1000),
      key_prefix: record.keyPrefix ?? null,
      tier: record.tier ?? null,
      alias: record.alias ?? null,
      upstream: record.upstream ?? null,
      upstream_model: record.upstreamModel ?? null,
      attempts: record.attempts ?? 0,
      ttfb_ms: record.ttfbMs ?? null,
      prompt_tokens: record.promptTokens ?? 0,
      completion_tokens: record.completionTokens ?? 0,
      cost_usd: usd(record.costNanos ?? 0),
    }
    if (record.usageEstimated) line.usage_estimated = true
    if (error) {
      line.error_type = error.type
      line.error_code = error.code ?? null
    }
    if (this.logBodies && record.messages !== undefined) line.messages = record.messages
    this.log[level](line, 'request')
  }
}

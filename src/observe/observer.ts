import type { GatewayError } from '../errors'
import type { Logger } from '../log'
import { usd } from '../spend/price'
import type { GatewayMetrics } from './metrics'
import type { RequestRecord } from './request-record'

const STATUS_CLASS = ['', '1xx', '2xx', '3xx', '4xx', '5xx']

/** Paths polled by machines: logged at debug level only, so they do not drown the request log. */
const QUIET_PATHS = new Set(['/health', '/metrics'])

/** Refusals logged as one summary line per second (per status), not a line each: a flood of them cannot flood the log. */
const SUMMARIZED_STATUSES = new Set([401, 429])
const SUMMARY_INTERVAL_MS = 1000
/** At most this many key prefixes are named in a summary of 429s. */
const SUMMARY_KEYS = 10

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

  constructor(
    private readonly log: Logger,
    readonly metrics: GatewayMetrics,
    private readonly logBodies: boolean,
  ) {}

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
    m.requests.inc(alias, upstream, STATUS_CLASS[Math.floor(status / 100)] ?? 'other')
    m.requestDuration.labels(alias).observe(seconds)
    if (record.upstreamMs !== undefined) {
      m.upstreamDuration.labels(upstream).observe(record.upstreamMs / 1000)
      if (record.ttfbMs === undefined) m.overhead.labels().observe(Math.max(0, seconds - record.upstreamMs / 1000))
    }
    if (record.ttfbMs !== undefined) m.ttfb.labels(alias).observe(record.ttfbMs / 1000)
    if (record.promptTokens) m.tokens.labels(alias, 'prompt').value += record.promptTokens
    if (record.completionTokens) m.tokens.labels(alias, 'completion').value += record.completionTokens
    if (record.costNanos) m.cost.labels(alias, upstream).value += record.costNanos / 1e9
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

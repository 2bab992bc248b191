import type { GatewayError } from '../errors'
import type { Logger } from '../log'
import type { GatewayMetrics } from '../metrics'
import type { RequestRecord } from './request-record'

const STATUS_CLASS = ['', '1xx', '2xx', '3xx', '4xx', '5xx']

/** Paths polled by machines: logged at debug level only, so they do not drown the request log. */
const QUIET_PATHS = new Set(['/health', '/metrics'])

/**
 * Ends a request's observation: one JSON log line and its metrics. Called exactly once per request,
 * by the conventions plugin, or by a stream when it ends. Never logs keys or message content (the
 * latter only with LOG_LEVEL=debug and GATEWAY_LOG_BODIES=1).
 */
export class RequestObserver {
  constructor(
    private readonly log: Logger,
    readonly metrics: GatewayMetrics,
    private readonly logBodies: boolean,
  ) {}

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
    }
    if (error) {
      line.error_type = error.type
      line.error_code = error.code ?? null
    }
    if (this.logBodies && record.messages !== undefined) line.messages = record.messages
    this.log[level](line, 'request')
  }
}

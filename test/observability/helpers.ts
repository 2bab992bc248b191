/** What the observability tests share: a traced gateway on fake upstreams, and finding a request's spans. */
import { faultServer, type FaultServer } from '../support/faults'
import { tempDir, writeConfig } from '../support/gateway'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { fakeUpstream, type FakeUpstream, openaiCompletion, openaiStream } from '../support/upstream'
import { waitFor } from '../support/wait'
import { otlpReceiver, type OtlpReceiver, type ReceivedSpan } from './receiver'

export const SERVER = 2
export const CLIENT = 3
export const STATUS_ERROR = 2

/**
 * Aliases on real upstreams: `good/model` (an OpenAI-compatible fake recording each request, its
 * headers included), `retry/model` (the fault server, one retry allowed), `fallback/model` (the
 * fault server, then the good fake), `broken/model` (the fault server alone).
 */
const config = (good: string, faults: string) => `
[tiers.open]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000

[upstreams.good]
kind = "openai"
base_url = "${good}"
api_key_env = "GOOD_UPSTREAM_KEY"

[upstreams.flaky]
kind = "openai"
base_url = "${faults}"
max_retries = 1
failure_threshold = 1000

[upstreams.broken]
kind = "openai"
base_url = "${faults}"
max_retries = 0
failure_threshold = 1000

[aliases."good/model"]
targets = [{ upstream = "good", model = "gpt-4o" }]

[aliases."retry/model"]
targets = [{ upstream = "flaky", model = "m-retry" }]

[aliases."fallback/model"]
targets = [{ upstream = "broken", model = "m-broken" }, { upstream = "good", model = "gpt-4o" }]

[aliases."broken/model"]
targets = [{ upstream = "broken", model = "m-broken" }]
`

export interface TracedGateway {
  gateway: GatewayProcess
  receiver: OtlpReceiver
  good: FakeUpstream
  faults: FaultServer
  key: string
  stop(): Promise<void>
}

/** A gateway exporting its traces to a live receiver, with the OTEL_* variables given (they win over the defaults here). */
export async function tracedGateway(otel: Record<string, string> = {}, receiver: OtlpReceiver = otlpReceiver()): Promise<TracedGateway> {
  const dir = tempDir()
  const good = fakeUpstream((request) =>
    request.body.stream ? openaiStream(String(request.body.model), ['Hello', ' there']) : openaiCompletion(String(request.body.model), 'Hello there'),
  )
  const faults = faultServer()
  const gateway = await spawnGateway(
    {
      GATEWAY_DB: `${dir.path}/gateway.sqlite`,
      GATEWAY_CONFIG: writeConfig(dir.path, config(good.url, faults.url)),
      GOOD_UPSTREAM_KEY: 'sk-upstream-secret-value',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '20',
      ...otel,
    },
    { expectFirstKey: true },
  )
  return {
    gateway,
    receiver,
    good,
    faults,
    key: gateway.firstKey!,
    async stop() {
      await gateway.stop()
      good.stop()
      faults.stop()
      receiver.stop()
      dir[Symbol.dispose]()
    },
  }
}

export interface RequestSpans {
  server: ReceivedSpan
  /** Its client spans (upstream attempts), in the order they started. */
  attempts: ReceivedSpan[]
}

/** The spans of the request with this x-request-id, once the receiver has its server span and `attempts` client spans. */
export function spansOf(receiver: OtlpReceiver, requestId: string, attempts: number): Promise<RequestSpans> {
  return waitFor(
    () => {
      const server = receiver.spans.find((s) => s.kind === SERVER && s.attributes['chatgate.request_id'] === requestId)
      if (!server) return null
      const children = receiver.spans
        .filter((s) => s.parentSpanId === server.spanId && s.traceId === server.traceId)
        .sort((a, b) => Number(a.startNs - b.startNs))
      return children.length === attempts ? { server, attempts: children } : null
    },
    () => `the spans of request ${requestId} (${attempts} attempts); received: ${receiver.spans.map((s) => s.name).join(', ')}`,
  )
}

/** POSTs JSON to the gateway with the key, and extra headers. */
export const post = (traced: TracedGateway, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${traced.gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${traced.key}`, ...headers },
    body: JSON.stringify(body),
  })

/** A chat completions body for `model`. */
export const chatBody = (model: string, content = 'Say hello', extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: 'user', content }],
  ...extra,
})

/** A sample value of a metric from /metrics text, NaN when absent. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels)
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue
    if (wanted.every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return NaN
}

/**
 * The OTEL_* variables on real gateway processes: OTLP/HTTP in JSON on request, the signal-specific
 * endpoint, message content when asked for, the sampler and its ratio (a sampled caller is followed,
 * the rest not exported, the upstream told either way), tracing off without an endpoint, and a bad
 * value refused at start, named.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { spawnGateway } from '../support/process'
import { chatBody, metricValue, post, spansOf, type TracedGateway, tracedGateway } from './helpers'
import { otlpReceiver } from './receiver'

setDefaultTimeout(TEST_MS)

let json: TracedGateway
let sampled: TracedGateway
let off: TracedGateway

setup(async () => {
  const receiver = otlpReceiver()
  ;[json, sampled, off] = await Promise.all([
    tracedGateway(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: '',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/custom/traces`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      },
      receiver,
    ),
    tracedGateway({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }),
    tracedGateway({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }),
  ])
})

teardown(() => Promise.all([json, sampled, off].map((traced) => traced?.stop())))

describe('OTLP/HTTP in JSON', () => {
  test('spans arrive as JSON at the traces endpoint as given, with the message content asked for', async () => {
    const response = await post(json, '/v1/chat/completions', chatBody('good/model', 'the words to capture'))
    expect(response.status).toBe(200)
    await response.text()
    const { server, attempts } = await spansOf(json.receiver, response.headers.get('x-request-id')!, 1)
    expect(json.receiver.exports.every((e) => e.path === '/custom/traces' && e.contentType === 'application/json')).toBe(true)
    expect(JSON.parse(String(server.attributes['gen_ai.input.messages']))).toEqual([{ role: 'user', content: 'the words to capture' }])
    expect(server.resource['service.name']).toBe('chatgate')
    expect(json.good.requests.at(-1)!.headers.get('traceparent')).toBe(`00-${server.traceId}-${attempts[0]!.spanId}-01`)
    expect(JSON.stringify(server.attributes)).not.toContain('sk-upstream-secret-value')
  })
})

describe('sampling', () => {
  test('ratio 0: a new trace is not exported but still propagated; a sampled caller is followed', async () => {
    const unsampled = await post(sampled, '/v1/chat/completions', chatBody('good/model'))
    expect(unsampled.status).toBe(200)
    await unsampled.text()
    const header = sampled.good.requests.at(-1)!.headers.get('traceparent')!
    expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/)

    const caller = '4bf92f3577b34da6a3ce929d0e0e4736'
    const followed = await post(sampled, '/v1/chat/completions', chatBody('good/model'), { traceparent: `00-${caller}-00f067aa0ba902b7-01` })
    await followed.text()
    const { server } = await spansOf(sampled.receiver, followed.headers.get('x-request-id')!, 1)
    expect(server.traceId).toBe(caller)
    // Spans are exported in the order they end: the unsampled request's would have come first.
    const unsampledId = unsampled.headers.get('x-request-id')
    expect(sampled.receiver.spans.some((s) => s.attributes['chatgate.request_id'] === unsampledId)).toBe(false)
    expect(sampled.receiver.spans.some((s) => s.traceId === header.split('-')[1])).toBe(false)
  })
})

describe('tracing off', () => {
  test('without an OTLP endpoint: no traceparent upstream, nothing exported, the counter at 0', async () => {
    const response = await post(off, '/v1/chat/completions', chatBody('good/model'))
    expect(response.status).toBe(200)
    await response.text()
    expect(off.good.requests.at(-1)!.headers.get('traceparent')).toBeNull()
    expect(off.receiver.exports).toHaveLength(0)
    const metrics = await (await fetch(`${off.gateway.url}/metrics`)).text()
    expect(metricValue(metrics, 'chatgate_otel_spans_dropped_total')).toBe(0)
  })

  test('a value the SDK cannot use stops the start, naming the variable', async () => {
    using dir = tempDir()
    const env = {
      GATEWAY_DB: `${dir.path}/gateway.sqlite`,
      GATEWAY_CONFIG: writeConfig(dir.path, '[tiers.t]\nrequests_per_minute = 10\ntokens_per_minute = 1000\nmax_concurrent = 1\n'),
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
    }
    await expect(spawnGateway({ ...env, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).rejects.toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not valid/)
    await expect(spawnGateway({ ...env, OTEL_TRACES_SAMPLER_ARG: '1.5', OTEL_TRACES_SAMPLER: 'traceidratio' })).rejects.toThrow(/OTEL_TRACES_SAMPLER_ARG/)
    await expect(spawnGateway({ ...env, OTEL_BSP_MAX_QUEUE_SIZE: 'lots' })).rejects.toThrow(/OTEL_BSP_MAX_QUEUE_SIZE/)
  })
})

/**
 * Traces over OTLP/HTTP in protobuf (the default protocol), from a real gateway process to a real
 * receiver: the server span of each inbound API, a client span per upstream attempt (retries and
 * fallbacks each their own), the caller's traceparent continued and the attempt's sent upstream,
 * the HTTP and GenAI attributes, errors, streams' time to first token, and no message content unless
 * asked for.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { chatBody, CLIENT, metricValue, post, SERVER, spansOf, STATUS_ERROR, type TracedGateway, tracedGateway } from './helpers'

setDefaultTimeout(TEST_MS)

let traced: TracedGateway

setup(async () => {
  traced = await tracedGateway({
    OTEL_SERVICE_NAME: 'gateway-under-test',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test,team=platform',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=token%20value',
  })
})

teardown(() => traced.stop())

const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c'
const CALLER_SPAN = 'b7ad6b7169203331'

/** The request that reached the good upstream last. */
const lastUpstreamRequest = () => traced.good.requests.at(-1)!

describe('a chat completion (JSON)', () => {
  test('one server span continuing the caller trace, one client span whose traceparent went upstream', async () => {
    const response = await post(traced, '/v1/chat/completions', chatBody('good/model', 'secret words'), {
      traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
      'user-agent': 'trace-test/1.0',
    })
    expect(response.status).toBe(200)
    await response.text()
    const { server, attempts } = await spansOf(traced.receiver, response.headers.get('x-request-id')!, 1)
    const [client] = attempts as [(typeof attempts)[number]]

    expect(server.traceId).toBe(CALLER_TRACE)
    expect(server.parentSpanId).toBe(CALLER_SPAN)
    expect(server.kind).toBe(SERVER)
    expect(server.name).toBe('POST /v1/chat/completions')
    expect(server.status.code).toBe(0)
    expect(server.attributes).toMatchObject({
      'http.request.method': 'POST',
      'url.path': '/v1/chat/completions',
      'url.scheme': 'http',
      'http.route': '/v1/chat/completions',
      'http.response.status_code': 200,
      'server.address': '127.0.0.1',
      'user_agent.original': 'trace-test/1.0',
      'chatgate.alias': 'good/model',
      'chatgate.tier': 'open',
      'chatgate.upstream': 'good',
      'chatgate.attempts': 1,
      'chatgate.api': 'chat.completions',
    })
    expect(server.attributes['chatgate.cost_usd']).toBeGreaterThan(0)
    expect(server.attributes['server.port']).toBe(Number(new URL(traced.gateway.url).port))
    expect(String(server.attributes['chatgate.key_prefix'])).toStartWith('sk-cg-')

    expect(client.kind).toBe(CLIENT)
    expect(client.name).toBe('chat gpt-4o')
    expect(client.traceId).toBe(CALLER_TRACE)
    expect(client.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.response.model': 'gpt-4o',
      'gen_ai.response.id': 'chatcmpl-upstream-1',
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': 11,
      'gen_ai.usage.output_tokens': 7,
      'server.address': '127.0.0.1',
      'chatgate.upstream': 'good',
      'chatgate.attempt': 1,
      'chatgate.alias': 'good/model',
      'chatgate.outcome': 'ok',
    })
    expect(client.attributes['chatgate.cost_usd']).toBe(server.attributes['chatgate.cost_usd'] as number)
    // The attempt lies within the request.
    expect(client.startNs >= server.startNs && client.endNs <= server.endNs).toBe(true)

    expect(lastUpstreamRequest().headers.get('traceparent')).toBe(`00-${CALLER_TRACE}-${client.spanId}-01`)

    // No message content without OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
    const everything = JSON.stringify([server.attributes, client.attributes])
    expect(everything).not.toContain('secret words')
    expect(everything).not.toContain('sk-upstream-secret-value')
    expect(everything).not.toContain(traced.key)
  })

  test('the resource, and the exporter headers, come from the OTEL_* variables', async () => {
    const response = await post(traced, '/v1/chat/completions', chatBody('good/model'))
    await response.text()
    const { server } = await spansOf(traced.receiver, response.headers.get('x-request-id')!, 1)
    expect(server.resource).toMatchObject({ 'service.name': 'gateway-under-test', 'deployment.environment.name': 'test', team: 'platform' })
    expect(typeof server.resource['service.version']).toBe('string')
    const last = traced.receiver.exports.at(-1)!
    expect(last.path).toBe('/v1/traces')
    expect(last.contentType).toBe('application/x-protobuf')
    expect(last.headers.get('x-collector-token')).toBe('token value')
  })

  test('without a caller traceparent, a new trace starts, and the upstream still gets the attempt span', async () => {
    const response = await post(traced, '/v1/chat/completions', chatBody('good/model'))
    await response.text()
    const { server, attempts } = await spansOf(traced.receiver, response.headers.get('x-request-id')!, 1)
    expect(server.parentSpanId).toBe('')
    expect(server.traceId).not.toBe(CALLER_TRACE)
    expect(lastUpstreamRequest().headers.get('traceparent')).toBe(`00-${server.traceId}-${attempts[0]!.spanId}-01`)
  })
})

describe('streams and the other inbound APIs', () => {
  test('a streamed chat completion records its time to first token', async () => {
    const response = await post(traced, '/v1/chat/completions', chatBody('good/model', 'stream please', { stream: true }))
    expect(await response.text()).toContain('[DONE]')
    const { server, attempts } = await spansOf(traced.receiver, response.headers.get('x-request-id')!, 1)
    const client = attempts[0]!
    const ttft = client.attributes['gen_ai.response.time_to_first_chunk'] as number
    expect(ttft).toBeGreaterThan(0)
    const first = client.events.find((e) => e.name === 'gen_ai.first_chunk')!
    expect(first.timeNs > client.startNs && first.timeNs <= client.endNs).toBe(true)
    expect(server.attributes['gen_ai.response.time_to_first_chunk'] as number).toBeGreaterThanOrEqual(ttft)
    expect(client.attributes['gen_ai.usage.output_tokens']).toBe(2)
    expect(server.attributes['http.response.status_code']).toBe(200)
  })

  test('Messages and Responses requests are named by their route', async () => {
    const messages = await post(traced, '/v1/messages', { model: 'good/model', max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] })
    expect(messages.status).toBe(200)
    await messages.text()
    const responses = await post(traced, '/v1/responses', { model: 'good/model', input: 'Hi' })
    expect(responses.status).toBe(200)
    await responses.text()
    const m = await spansOf(traced.receiver, messages.headers.get('x-request-id')!, 1)
    const r = await spansOf(traced.receiver, responses.headers.get('x-request-id')!, 1)
    expect(m.server.name).toBe('POST /v1/messages')
    expect(r.server.name).toBe('POST /v1/responses')
    for (const { attempts } of [m, r]) {
      expect(attempts[0]!.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-4o', 'gen_ai.usage.input_tokens': 11 })
    }
  })
})

describe('retries, fallbacks and errors', () => {
  test('a retry is a second client span; the failed one says why', async () => {
    const response = await post(traced, '/v1/chat/completions', chatBody('retry/model', 'flaky:1#retry-span'))
    expect(response.status).toBe(200)
    await response.text()
    const { server, attempts } = await spansOf(traced.receiver, response.headers.get('x-request-id')!, 2)
    const [failed, retried] = attempts as [(typeof attempts)[number], (typeof attempts)[number]]
    expect(failed.status.code).toBe(STATUS_ERROR)
    expect(failed.attributes).toMatchObject({ 'chatgate.upstream': 'flaky', 'chatgate.attempt': 1, 'error.type': 'upstream_http_error' })
    expect(retried.status.code).toBe(0)
    expect(retried.attributes).toMatchObject({ 'chatgate.upstream': 'flaky', 'chatgate.attempt': 2, 'chatgate.outcome': 'ok' })
    expect(failed.endNs <= retried.startNs).toBe(true)
    expect(server.attributes['chatgate.attempts']).toBe(2)
    expect(server.status.code).toBe(0)
  })

  test('a fallback is a client span on the next target, its traceparent sent there', async () => {
    const response = await post(traced, '/v1/chat/completions', chatBody('fallback/model', '500#fallback-span'))
    expect(response.status).toBe(200)
    await response.text()
    const { attempts } = await spansOf(traced.receiver, response.headers.get('x-request-id')!, 2)
    expect(attempts.map((a) => a.attributes['chatgate.upstream'])).toEqual(['broken', 'good'])
    expect(attempts[0]!.status.code).toBe(STATUS_ERROR)
    expect(attempts[0]!.attributes['gen_ai.request.model']).toBe('m-broken')
    expect(lastUpstreamRequest().headers.get('traceparent')).toBe(`00-${attempts[1]!.traceId}-${attempts[1]!.spanId}-01`)
  })

  test('a request that fails: both spans in error, with error.type', async () => {
    const response = await post(traced, '/v1/chat/completions', chatBody('broken/model', '500#error-span'))
    expect(response.status).toBe(502)
    await response.text()
    const { server, attempts } = await spansOf(traced.receiver, response.headers.get('x-request-id')!, 1)
    expect(server.status.code).toBe(STATUS_ERROR)
    expect(server.attributes).toMatchObject({ 'http.response.status_code': 502, 'error.type': 'upstream_http_error' })
    expect(attempts[0]!.status.code).toBe(STATUS_ERROR)
    expect(attempts[0]!.attributes['error.type']).toBe('upstream_http_error')
  })

  test('a refused key: a server span with the status, not an error of the gateway; counted as status="401"', async () => {
    const response = await fetch(`${traced.gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-cg-not-a-real-key' },
      body: JSON.stringify(chatBody('good/model')),
    })
    expect(response.status).toBe(401)
    await response.text()
    const { server } = await spansOf(traced.receiver, response.headers.get('x-request-id')!, 0)
    expect(server.name).toBe('POST /v1/chat/completions')
    expect(server.status.code).toBe(0)
    expect(server.attributes).toMatchObject({ 'http.response.status_code': 401, 'error.type': 'authentication_error' })
    const metrics = await (await fetch(`${traced.gateway.url}/metrics`)).text()
    expect(metricValue(metrics, 'chatgate_requests_total', { status: '401' })).toBeGreaterThanOrEqual(1)
    expect(metricValue(metrics, 'chatgate_otel_spans_dropped_total')).toBe(0)
  })
})

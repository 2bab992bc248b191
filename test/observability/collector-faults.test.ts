/**
 * A collector that is down, answers 500, or takes 10 s over every export changes nothing for callers:
 * every request is answered as usual, spans wait in a bounded queue (16 here) and what never reaches
 * the collector is counted in chatgate_otel_spans_dropped_total, one by one: in the end, every span
 * the requests made (a server span and a client span each).
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { waitFor } from '../support/wait'
import { chatBody, metricValue, post, type TracedGateway, tracedGateway } from './helpers'
import { otlpReceiver } from './receiver'

setDefaultTimeout(TEST_MS)

const REQUESTS = 60
/** Bounds the exporter: the slow collector's 10 s exports are given up on long before they end. */
const FAULT_OTEL = { OTEL_BSP_MAX_QUEUE_SIZE: '16', OTEL_EXPORTER_OTLP_TIMEOUT: '500' }

/** A port nothing listens on: a collector that is down. */
function deadCollector() {
  const receiver = otlpReceiver()
  receiver.stop()
  return receiver
}

const collectors = {
  down: deadCollector,
  'answering 500': () => otlpReceiver({ kind: 'fail', status: 500 }),
  'slow (10 s per export)': () => otlpReceiver({ kind: 'slow', ms: 10_000 }),
}

const gateways = new Map<string, TracedGateway>()

setup(async () => {
  for (const [name, collector] of Object.entries(collectors)) gateways.set(name, await tracedGateway(FAULT_OTEL, collector()))
})

teardown(() => Promise.all([...gateways.values()].map((traced) => traced.stop())))

/** Sends REQUESTS requests, ten at a time, half of them streamed; returns their statuses and bodies' ends. */
async function load(traced: TracedGateway): Promise<string[]> {
  const outcomes: string[] = []
  for (let i = 0; i < REQUESTS; i += 10) {
    const batch = Array.from({ length: 10 }, async (_, j) => {
      const stream = (i + j) % 2 === 0
      const response = await post(traced, '/v1/chat/completions', chatBody('good/model', `request ${i + j}`, stream ? { stream: true } : {}))
      const text = await response.text()
      return `${response.status} ${stream ? text.endsWith('data: [DONE]\n\n') : JSON.parse(text).choices[0].message.content === 'Hello there'}`
    })
    outcomes.push(...(await Promise.all(batch)))
  }
  return outcomes
}

describe.each(Object.keys(collectors))('a collector %s', (name) => {
  test('every request is answered, and every span is counted as dropped', async () => {
    const traced = gateways.get(name)!
    expect(await load(traced)).toEqual(Array.from({ length: REQUESTS }, () => '200 true'))
    let dropped = NaN
    const counted = async () => {
      dropped = metricValue(await (await fetch(`${traced.gateway.url}/metrics`)).text(), 'chatgate_otel_spans_dropped_total')
      return dropped === 2 * REQUESTS
    }
    await waitFor(counted, () => `all ${2 * REQUESTS} spans counted as dropped (${dropped} so far)`)
    expect(traced.receiver.spans).toHaveLength(0)
    expect(traced.gateway.output()).toContain('trace spans dropped')
  })
})

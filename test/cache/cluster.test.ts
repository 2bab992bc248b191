import { expect, setDefaultTimeout, test } from 'bun:test'
import { type Cluster, createKey, startCluster } from '../support/cluster'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { describeWithServers } from '../support/servers'
import type { GatewayProcess } from '../support/process'
import type { FakeUpstream } from '../support/upstream'
import { waitFor } from '../support/wait'
import { chatCalls, CONFIG, countingUpstream } from './upstream'

setDefaultTimeout(TEST_MS)

describeWithServers('the response cache in a cluster (Redis)', ['redis', 'postgres'], () => {
  let upstream: FakeUpstream
  let cluster: Cluster
  let a: GatewayProcess
  let b: GatewayProcess
  let key: string

  setup(async () => {
    upstream = countingUpstream()
    cluster = await startCluster(CONFIG(upstream.url))
    ;[a, b] = (await cluster.start(2)) as [GatewayProcess, GatewayProcess]
    key = (await createKey(a.url, { name: 'cache', tier: 't' })).key
  })
  teardown(async () => {
    await cluster.dispose()
    upstream.stop()
  })

  const chat = (gateway: GatewayProcess, content: string, stream = false) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'openai/cached', messages: [{ role: 'user', content }], stream }),
    })

  test('an answer made on instance A is a hit on instance B, as JSON and as a stream', async () => {
    const made = await chat(a, 'shared answer')
    expect(made.headers.get('x-svc-cache')).toBe('miss')
    const first = (await made.json()) as any
    // The entry is written to Redis as the answer leaves: B may ask before it landed (a miss), so it waits on it.
    const hit = await waitFor(async () => {
      const response = await chat(b, 'shared answer')
      return response.headers.get('x-svc-cache') === 'hit' && ((await response.json()) as any)
    }, 'a hit on B')
    expect(hit.choices).toEqual(first.choices)
    const calls = chatCalls(upstream)
    const streamed = await chat(b, 'shared answer', true)
    expect(streamed.headers.get('x-svc-cache')).toBe('hit')
    const text = await streamed.text()
    expect(text).toContain('answer to shared answer'.slice(0, 5))
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true)
    expect(chatCalls(upstream)).toBe(calls)
  })
})

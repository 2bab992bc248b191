/**
 * The Responses API's conversation store in cluster mode: two gateway processes on one Postgres and
 * one Redis (test/support/cluster.ts), behind a load balancer that sends each turn anywhere. A
 * response stored through one instance is read, listed, continued and deleted through the other:
 * a translated one rebuilt from Postgres (its sealed Anthropic thinking opening there too), a native
 * one sent to the upstream that holds it. Upstreams: the fake Anthropic API of
 * test/support/fakes/anthropic.ts (https://docs.anthropic.com/en/api/messages, signatures checked)
 * and the fake OpenAI Responses API of test/support/fakes/openai-responses.ts
 * (https://platform.openai.com/docs/api-reference/responses).
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { type Cluster, createKey, startCluster } from '../support/cluster'
import { fakeAnthropic, type FakeAnthropic } from '../support/fakes/anthropic'
import { fakeOpenAIResponses, type FakeOpenAIResponses } from '../support/fakes/openai-responses'
import { setup, teardown, TEST_MS } from '../support/hooks'
import type { GatewayProcess } from '../support/process'
import { describeWithServers } from '../support/servers'
import { created, get, OPEN_TIER, postJson } from './helpers'

setDefaultTimeout(TEST_MS)

type Json = Record<string, any>

const config = (anthropic: string, native: string) => `
${OPEN_TIER}
[upstreams.claude]
kind = "anthropic"
base_url = "${anthropic}"
api_key_env = "FAKE_ANTHROPIC_KEY"

[upstreams.native]
kind = "openai"
base_url = "${native}"
api_key_env = "FAKE_OPENAI_KEY"
responses = "native"

[aliases."claude/sonnet"]
targets = [{ upstream = "claude", model = "claude-sonnet-4-5" }]

[aliases."native/gpt"]
targets = [{ upstream = "native", model = "gpt-5.6" }]
`

const WEATHER = { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }

describeWithServers('Responses conversations across instances (2 processes, one Postgres, one Redis)', ['redis', 'postgres'], () => {
  let cluster: Cluster
  let claude: FakeAnthropic
  let native: FakeOpenAIResponses
  let one: GatewayProcess
  let two: GatewayProcess
  let key: string

  setup(async () => {
    claude = fakeAnthropic({ toolInput: () => ({ city: 'Paris' }) })
    native = fakeOpenAIResponses()
    cluster = await startCluster(config(claude.url, native.url))
    ;[one, two] = (await cluster.start(2, {
      FAKE_ANTHROPIC_KEY: 'sk-ant-fake',
      FAKE_OPENAI_KEY: 'sk-openai-fake',
      // Every instance seals with the same secret, as docs/cluster.md has operators set it.
      GATEWAY_SECRET: 'responses-cluster-test-secret-0123456789',
    })) as [GatewayProcess, GatewayProcess]
    key = (await createKey(one.url, { name: 'cluster', tier: 'open' })).key
  })

  teardown(async () => {
    await cluster?.dispose()
    claude?.stop()
    native?.stop()
  })

  test('a translated response made on one instance is read, listed and continued on the other: its signed thinking restored', async () => {
    const first = await created(
      await postJson(one.url, key, { model: 'claude/sonnet', input: 'weather in Paris?', tools: [WEATHER], reasoning: { effort: 'low' } }),
    )
    const call = first.output.find((item: Json) => item.type === 'function_call')
    expect(await (await get(two.url, key, `/v1/responses/${first.id}`)).json()).toEqual(first)
    const items = (await (await get(two.url, key, `/v1/responses/${first.id}/input_items`)).json()) as { data: Json[] }
    expect(items.data).toEqual([expect.objectContaining({ type: 'message', role: 'user' })])

    const second = await created(
      await postJson(two.url, key, {
        model: 'claude/sonnet',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: '18C' }],
      }),
    )
    expect(second.output.at(-1).content[0].text).toContain('(the tool said: 18C)')
    const sent = claude.messageCalls().at(-1)!.body.messages as Json[]
    expect(sent[1]!.content[0]).toEqual({ type: 'thinking', thinking: expect.any(String), signature: expect.stringMatching(/^fakesig_a_/) })

    // Another key, on either instance: as if it did not exist.
    const { key: other } = await createKey(two.url, { name: 'other', tier: 'open' })
    for (const instance of [one, two]) expect((await get(instance.url, other, `/v1/responses/${second.id}`)).status).toBe(404)
    // Deleted on one instance: gone on the other.
    expect((await get(one.url, key, `/v1/responses/${second.id}`, 'DELETE')).status).toBe(200)
    expect((await get(two.url, key, `/v1/responses/${second.id}`)).status).toBe(404)
  })

  test('stateless (store:false, encrypted reasoning): a turn sealed on one instance opens on the other', async () => {
    const base = { model: 'claude/sonnet', tools: [WEATHER], store: false, include: ['reasoning.encrypted_content'], reasoning: { effort: 'low' } }
    const input: Json[] = [{ role: 'user', content: 'weather in Paris?' }]
    const first = await created(await postJson(one.url, key, { ...base, input }))
    const call = first.output.find((item: Json) => item.type === 'function_call')
    input.push(...first.output, { type: 'function_call_output', call_id: call.call_id, output: '18C' })
    const second = await created(await postJson(two.url, key, { ...base, input }))
    expect(second.status).toBe('completed')
    expect(claude.messageCalls().at(-1)!.body.messages[1].content[0].type).toBe('thinking')
    expect((await get(one.url, key, `/v1/responses/${first.id}`)).status).toBe(404)
  })

  test('a native response made on one instance is continued, read and deleted through the other, at its upstream', async () => {
    const first = await created(await postJson(one.url, key, { model: 'native/gpt', input: 'remember 7' }))
    const next = await postJson(two.url, key, { model: 'native/gpt', previous_response_id: first.id, input: 'what was it?' })
    expect(next.status).toBe(200)
    expect(next.headers.get('x-svc-upstream')).toBe('native')
    const second = (await next.json()) as Json
    expect(second.model).toBe('native/gpt')
    expect(native.createCalls().at(-1)!.body).toMatchObject({ model: 'gpt-5.6', previous_response_id: first.id, input: 'what was it?' })
    expect(((await (await get(one.url, key, `/v1/responses/${second.id}`)).json()) as Json).id).toBe(second.id)
    expect((await get(two.url, key, `/v1/responses/${second.id}`, 'DELETE')).status).toBe(200)
    expect((await get(one.url, key, `/v1/responses/${second.id}`)).status).toBe(404)
  })
})

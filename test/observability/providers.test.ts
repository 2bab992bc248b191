/**
 * Every upstream kind's request carries its attempt's `traceparent` (the three places that call
 * fetch for an attempt: the generic sender, the sender with its own error mapping, Google's), and its
 * client span names the provider as the GenAI conventions do. Against the fakes of
 * test/support/fakes/, each recording the headers it got.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { fakeAnthropic, type FakeAnthropic } from '../support/fakes/anthropic'
import { FAKE_AZURE_KEY, fakeAzure, type FakeAzure } from '../support/fakes/azure'
import { FAKE_AWS, fakeBedrock, type FakeBedrock } from '../support/fakes/bedrock'
import type { RecordedCall } from '../support/fakes/common'
import { fakeGemini, type FakeGemini } from '../support/fakes/gemini'
import { tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { chatBody, spansOf } from './helpers'
import { otlpReceiver, type OtlpReceiver } from './receiver'

setDefaultTimeout(TEST_MS)

const dir = tempDir()
let gateway: GatewayProcess
let receiver: OtlpReceiver
let claude: FakeAnthropic
let gemini: FakeGemini
let azure: FakeAzure
let bedrock: FakeBedrock

setup(async () => {
  receiver = otlpReceiver()
  claude = fakeAnthropic()
  gemini = fakeGemini()
  azure = fakeAzure()
  bedrock = fakeBedrock()
  const config = `
[tiers.open]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000

[upstreams.claude]
kind = "anthropic"
base_url = "${claude.url}"
api_key_env = "ANTHROPIC_KEY"

[upstreams.gem]
kind = "gemini"
base_url = "${gemini.url}"
api_key_env = "GEMINI_KEY"

[upstreams.az]
kind = "azure"
endpoint = "${azure.endpoint}"
api_key_env = "AZ_KEY"

[upstreams.aws]
kind = "bedrock"
region = "us-east-1"
base_url = "${bedrock.url}"
access_key_id_env = "AWS_AK"
secret_access_key_env = "AWS_SK"

[aliases."claude/sonnet"]
targets = [{ upstream = "claude", model = "claude-sonnet-4-5" }]

[aliases."gem/flash"]
targets = [{ upstream = "gem", model = "gemini-2.5-flash" }]

[aliases."az/gpt"]
targets = [{ upstream = "az", model = "gpt-4o-prod" }]

[aliases."aws/llama"]
targets = [{ upstream = "aws", model = "meta.llama3-1-70b-instruct-v1:0" }]
`
  gateway = await spawnGateway(
    {
      GATEWAY_DB: `${dir.path}/gateway.sqlite`,
      GATEWAY_CONFIG: writeConfig(dir.path, config),
      ANTHROPIC_KEY: 'sk-ant-fake',
      GEMINI_KEY: 'gemini-fake-key',
      AZ_KEY: FAKE_AZURE_KEY,
      AWS_AK: FAKE_AWS.accessKeyId,
      AWS_SK: FAKE_AWS.secretAccessKey,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '20',
    },
    { expectFirstKey: true },
  )
})

teardown(async () => {
  await gateway.stop()
  for (const fake of [receiver, claude, gemini, azure, bedrock]) fake.stop()
  dir[Symbol.dispose]()
})

const kinds: { alias: string; provider: string; calls: () => RecordedCall[] }[] = [
  { alias: 'claude/sonnet', provider: 'anthropic', calls: () => claude.calls },
  { alias: 'gem/flash', provider: 'gcp.gemini', calls: () => gemini.calls },
  { alias: 'az/gpt', provider: 'azure.ai.openai', calls: () => azure.calls },
  { alias: 'aws/llama', provider: 'aws.bedrock', calls: () => bedrock.calls },
]

describe.each(kinds)('an upstream of $provider', ({ alias, provider, calls }) => {
  test('gets the attempt span as its traceparent; the span names the provider', async () => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.firstKey}` },
      body: JSON.stringify(chatBody(alias, 'Hello', { max_tokens: 30 })),
    })
    expect(response.status).toBe(200)
    await response.text()
    const { attempts } = await spansOf(receiver, response.headers.get('x-request-id')!, 1)
    const attempt = attempts[0]!
    expect(attempt.attributes['gen_ai.provider.name']).toBe(provider)
    expect(calls().at(-1)!.headers.get('traceparent')).toBe(`00-${attempt.traceId}-${attempt.spanId}-01`)
  })
})

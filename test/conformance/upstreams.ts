/**
 * One gateway process in front of a fake of every upstream kind, for a conformance test file to
 * share: the mock, an OpenAI-compatible server (chat completions), OpenAI's Responses API (native),
 * Anthropic, Gemini, Vertex AI (Gemini and Claude models), Bedrock (Claude with thinking, Nova) and
 * Azure OpenAI. Each alias `k/<name>` reaches one target, so an answer's shape is that kind's.
 */
import { ADMIN_KEY, createKey } from '../support/cluster'
import { fakeAnthropic, type FakeAnthropic } from '../support/fakes/anthropic'
import { FAKE_AZURE_KEY, fakeAzure, type FakeAzure } from '../support/fakes/azure'
import { FAKE_AWS, fakeBedrock, type FakeBedrock } from '../support/fakes/bedrock'
import { fakeGemini, type FakeGemini } from '../support/fakes/gemini'
import { fakeOpenAI, type FakeOpenAI } from '../support/fakes/openai'
import { fakeOpenAIResponses, type FakeOpenAIResponses } from '../support/fakes/openai-responses'
import { fakeVertex, type FakeVertex, serviceAccountFile } from '../support/fakes/vertex'
import { tempDir, writeConfig } from '../support/gateway'
import { type GatewayProcess, spawnGateway } from '../support/process'

const OPEN_TIER = `
[tiers.open]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000
`

const CLAUDE_ON_BEDROCK = 'us.anthropic.claude-sonnet-4-20250514-v1:0'

interface Urls {
  openai: string
  native: string
  anthropic: string
  gemini: string
  vertex: string
  bedrock: string
  azure: string
}

const config = (u: Urls) => `
${OPEN_TIER}
[upstreams.mock]
kind = "mock"

[upstreams.openai]
kind = "openai"
base_url = "${u.openai}"
api_key_env = "FAKE_OPENAI_KEY"

[upstreams.native]
kind = "openai"
base_url = "${u.native}"
api_key_env = "FAKE_OPENAI_KEY"
responses = "native"

[upstreams.anthropic]
kind = "anthropic"
base_url = "${u.anthropic}"
api_key_env = "FAKE_ANTHROPIC_KEY"

[upstreams.gemini]
kind = "gemini"
base_url = "${u.gemini}"
api_key_env = "GEMINI_KEY"

[upstreams.vertex]
kind = "vertex"
project = "chatgate-test"
location = "us-central1"
credentials_file_env = "VERTEX_SA"
base_url = "${u.vertex}"

[upstreams.bedrock]
kind = "bedrock"
region = "us-east-1"
base_url = "${u.bedrock}"
access_key_id_env = "AWS_AK"
secret_access_key_env = "AWS_SK"

[upstreams.azure]
kind = "azure"
endpoint = "${u.azure}"
api_key_env = "AZ_KEY"

[aliases."k/mock"]
targets = [{ upstream = "mock", model = "echo" }]

[aliases."k/mock-embed"]
targets = [{ upstream = "mock", model = "embed" }]

[aliases."k/openai"]
targets = [{ upstream = "openai", model = "gpt-4o" }]

[aliases."k/native"]
targets = [{ upstream = "native", model = "gpt-5" }]

[aliases."k/anthropic"]
targets = [{ upstream = "anthropic", model = "claude-sonnet-4-5" }]

[aliases."k/gemini"]
targets = [{ upstream = "gemini", model = "gemini-2.5-flash" }]

[aliases."k/gemini-embed"]
targets = [{ upstream = "gemini", model = "gemini-embedding-001" }]

[aliases."k/vertex"]
targets = [{ upstream = "vertex", model = "gemini-2.5-pro" }]

[aliases."k/vertex-claude"]
targets = [{ upstream = "vertex", model = "claude-sonnet-4-5" }]

[aliases."k/vertex-embed"]
targets = [{ upstream = "vertex", model = "text-embedding-005" }]

[aliases."k/bedrock"]
targets = [{ upstream = "bedrock", model = "${CLAUDE_ON_BEDROCK}" }]

[aliases."k/bedrock-nova"]
targets = [{ upstream = "bedrock", model = "amazon.nova-pro-v1:0" }]

[aliases."k/bedrock-embed"]
targets = [{ upstream = "bedrock", model = "amazon.titan-embed-text-v2:0" }]

[aliases."k/azure"]
targets = [{ upstream = "azure", model = "gpt-4o-prod" }]

[aliases."k/azure-embed"]
targets = [{ upstream = "azure", model = "embed-prod" }]
`

export interface EveryKind {
  gateway: GatewayProcess
  key: string
  stop(): Promise<void>
}

interface Fakes {
  openai: FakeOpenAI
  native: FakeOpenAIResponses
  anthropic: FakeAnthropic
  claudeBehindVertex: FakeAnthropic
  gemini: FakeGemini
  vertex: FakeVertex
  bedrock: FakeBedrock
  azure: FakeAzure
}

function startFakes(): Fakes {
  const claudeBehindVertex = fakeAnthropic({ name: 'vertex', toolInput: () => ({ city: 'Paris' }) })
  return {
    openai: fakeOpenAI({ toolInput: () => ({ city: 'Paris' }) }),
    native: fakeOpenAIResponses({ toolInput: () => ({ city: 'Paris' }) }),
    anthropic: fakeAnthropic({ toolInput: () => ({ city: 'Paris' }) }),
    claudeBehindVertex,
    gemini: fakeGemini(),
    vertex: fakeVertex({ anthropic: { url: claudeBehindVertex.url, apiKey: 'sk-ant-fake' } }),
    bedrock: fakeBedrock({ toolInput: () => ({ city: 'Paris' }) }),
    azure: fakeAzure(),
  }
}

/** Every fake started, one gateway in front of them all, and a key of an open tier. */
export async function everyKind(): Promise<EveryKind> {
  const dir = tempDir('chatgate-conformance-')
  const fakes = startFakes()
  const account = serviceAccountFile(dir.path, fakes.vertex.tokenUri)
  fakes.vertex.trust(account)
  const urls: Urls = {
    openai: fakes.openai.url,
    native: fakes.native.url,
    anthropic: fakes.anthropic.url,
    gemini: fakes.gemini.url,
    vertex: fakes.vertex.url,
    bedrock: fakes.bedrock.url,
    azure: fakes.azure.endpoint,
  }
  const gateway = await spawnGateway({
    GATEWAY_DB: `${dir.path}/gateway.sqlite`,
    GATEWAY_CONFIG: writeConfig(dir.path, config(urls)),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    FAKE_OPENAI_KEY: 'sk-openai-fake',
    FAKE_ANTHROPIC_KEY: 'sk-ant-fake',
    GEMINI_KEY: 'gemini-fake-key',
    VERTEX_SA: account.path,
    AWS_AK: FAKE_AWS.accessKeyId,
    AWS_SK: FAKE_AWS.secretAccessKey,
    AZ_KEY: FAKE_AZURE_KEY,
  })
  const { key } = await createKey(gateway.url, { name: 'conformance', tier: 'open' })
  return {
    gateway,
    key,
    async stop() {
      await gateway.stop()
      for (const fake of Object.values(fakes)) fake.stop()
      dir[Symbol.dispose]()
    },
  }
}

/**
 * What every real-client test shares: a gateway process (spawned as in production, `bun
 * src/main.ts`) in front of fakes of every kind of upstream the gateway speaks to (written from the
 * providers' published references: test/support/fakes/) and the mock, behind the aliases the docs
 * pages under docs/clients/ use:
 *
 * | alias             | target                                                                       |
 * | ----------------- | ---------------------------------------------------------------------------- |
 * | `anthropic/smart` | the fake Anthropic upstream, model `claude-sonnet-4-5`                       |
 * | `anthropic/fast`  | the fake Anthropic upstream, model `claude-haiku-4-5`                        |
 * | `anthropic/gpt`   | the fake OpenAI-compatible upstream, model `gpt-4o`                          |
 * | `local/echo`      | the built-in mock                                                            |
 * | `openai/gpt-5.6`  | the fake OpenAI Responses upstream (`responses = "native"`), model `gpt-5.6` |
 * | `openai/gpt-4o`   | the fake OpenAI-compatible upstream, model `gpt-4o` (Responses translated)   |
 * | `gemini/flash`    | the fake Gemini API (kind `gemini`, API key), model `gemini-2.5-flash`       |
 * | `vertex/gemini`   | the fake Vertex AI (kind `vertex`, a service account), `gemini-2.5-pro`      |
 * | `vertex/claude`   | the fake Vertex AI, Claude through rawPredict, `claude-sonnet-4-5`          |
 * | `bedrock/claude`  | the fake Bedrock runtime (kind `bedrock`, SigV4), Claude Sonnet 4 (Converse) |
 * | `azure/gpt`       | the fake Azure OpenAI resource (kind `azure`, v1 API, `responses = "native"`) |
 *
 * One gateway per test file, reused by its tests; everything binds 127.0.0.1. The cloud fakes cost
 * a few milliseconds to start (a throwaway RSA key for the Vertex AI service account the most).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, tempDir, writeConfig } from '../support/gateway'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { ANTHROPIC_MARKER, fakeAnthropic, type FakeAnthropic, type FakeAnthropicOptions } from '../support/fakes/anthropic'
import { AZURE_CHAT_MARKER, AZURE_RESPONSES_MARKER, FAKE_AZURE_KEY, fakeAzure, type FakeAzure, type FakeAzureOptions } from '../support/fakes/azure'
import { BEDROCK_MARKER, FAKE_AWS, fakeBedrock, type FakeBedrock, type FakeBedrockOptions } from '../support/fakes/bedrock'
import { fakeGemini, type FakeGemini, type FakeGeminiOptions, GEMINI_MARKER } from '../support/fakes/gemini'
import { fakeOpenAI, type FakeOpenAI, type FakeOpenAIOptions, OPENAI_MARKER } from '../support/fakes/openai'
import { fakeOpenAIResponses, type FakeOpenAIResponses, type FakeOpenAIResponsesOptions, RESPONSES_MARKER } from '../support/fakes/openai-responses'
import { accountKeyPair, fakeVertex, type FakeVertex, type FakeVertexOptions, serviceAccountFile } from '../support/fakes/vertex'
import type { RecordedCall } from '../support/fakes/common'
import type { TargetKind } from './matrix'

export const ALIASES = {
  anthropic: 'anthropic/smart',
  anthropicFast: 'anthropic/fast',
  openai: 'anthropic/gpt',
  mock: 'local/echo',
  /** An OpenAI upstream that serves the Responses API itself (`responses = "native"`). */
  native: 'openai/gpt-5.6',
  /** The OpenAI-compatible chat upstream under an OpenAI-style name: Responses requests are translated to chat. */
  chat: 'openai/gpt-4o',
  /** The Gemini API (kind `gemini`). */
  gemini: 'gemini/flash',
  /** Vertex AI (kind `vertex`): a Gemini model, and Claude through rawPredict. */
  vertexGemini: 'vertex/gemini',
  vertexClaude: 'vertex/claude',
  /** Amazon Bedrock (kind `bedrock`): Claude through Converse. */
  bedrock: 'bedrock/claude',
  /** Azure OpenAI (kind `azure`): chat on the v1 API, the Responses API native. */
  azure: 'azure/gpt',
} as const

/** The text of the fake Vertex AI's Gemini answers (Claude on Vertex AI answers with the Anthropic fake's, `VERTEX_CLAUDE_MARKER`). */
export const VERTEX_MARKER = 'chatgate-vertex-final'
export const VERTEX_CLAUDE_MARKER = 'chatgate-vertex-claude-final'
/** The Bedrock model behind `bedrock/claude`. */
export const BEDROCK_CLAUDE = 'us.anthropic.claude-sonnet-4-20250514-v1:0'

export interface ClientsGateway {
  gateway: GatewayProcess
  /** The gateway's root, e.g. `http://127.0.0.1:41234` (no `/v1`). */
  url: string
  /** A gateway key (tier `t`, generous limits). */
  key: string
  anthropic: FakeAnthropic
  openai: FakeOpenAI
  /** The fake OpenAI Responses API behind `openai/gpt-5.6`. */
  responses: FakeOpenAIResponses
  gemini: FakeGemini
  /** The fake Vertex AI, and the fake Anthropic API that answers for Claude behind it. */
  vertex: FakeVertex
  vertexClaude: FakeAnthropic
  bedrock: FakeBedrock
  azure: FakeAzure
  /** Stops the gateway and the fakes, removes the temp dir. */
  stop(): Promise<void>
}

export interface ClientsGatewayOptions {
  anthropic?: FakeAnthropicOptions
  openai?: FakeOpenAIOptions
  responses?: FakeOpenAIResponsesOptions
  gemini?: FakeGeminiOptions
  /** The fake Vertex AI's Gemini model, and the Anthropic fake behind its Claude. */
  vertex?: FakeVertexOptions
  vertexClaude?: FakeAnthropicOptions
  bedrock?: FakeBedrockOptions
  azure?: FakeAzureOptions
  /** More upstreams and aliases, in TOML, appended to the config. */
  extraToml?: (fakes: { anthropic: FakeAnthropic; openai: FakeOpenAI }) => string
  /** Fakes of its own to stop with the rest. */
  others?: { stop(): void }[]
}

/** Options that make every fake call a tool with `toolInput(name)`. */
export function toolInputEverywhere(toolInput: (name: string) => Record<string, unknown>): ClientsGatewayOptions {
  const each = { toolInput }
  return {
    anthropic: each,
    openai: each,
    responses: each,
    gemini: each,
    vertex: each,
    vertexClaude: each,
    bedrock: each,
    azure: { chat: each, responses: each },
  }
}

export const FAKE_ANTHROPIC_KEY = 'sk-ant-fake-upstream-key'
export const FAKE_OPENAI_KEY = 'sk-openai-fake-upstream-key'
export const FAKE_GEMINI_KEY = 'gemini-fake-upstream-key'

/** One key pair for the Vertex AI service account of every test file of this process: making one takes a while. */
let accountKeys: ReturnType<typeof accountKeyPair> | undefined

/** The cloud fakes, started beside the others; `stop` stops them all. */
function startCloudFakes(dir: string, options: ClientsGatewayOptions) {
  const gemini = fakeGemini({ apiKey: FAKE_GEMINI_KEY, ...options.gemini })
  const vertexClaude = fakeAnthropic({ name: 'v', marker: VERTEX_CLAUDE_MARKER, ...options.vertexClaude })
  const vertex = fakeVertex({ marker: VERTEX_MARKER, name: 'v', ...options.vertex, anthropic: { url: vertexClaude.url, apiKey: 'sk-ant-fake' } })
  const account = serviceAccountFile(dir, vertex.tokenUri, undefined, (accountKeys ??= accountKeyPair()))
  vertex.trust(account)
  const bedrock = fakeBedrock(options.bedrock)
  const azure = fakeAzure(options.azure)
  const stop = () => {
    for (const fake of [gemini, vertex, vertexClaude, bedrock, azure]) fake.stop()
  }
  return { gemini, vertex, vertexClaude, bedrock, azure, accountFile: account.path, stop }
}

/** The upstreams and aliases of the cloud fakes, in TOML. */
const cloudToml = (fakes: ReturnType<typeof startCloudFakes>) => `
[upstreams.gem]
kind = "gemini"
base_url = "${fakes.gemini.url}"
api_key_env = "FAKE_GEMINI_KEY"
max_retries = 0

[upstreams.vtx]
kind = "vertex"
project = "chatgate-test"
location = "us-central1"
credentials_file_env = "FAKE_VERTEX_CREDENTIALS"
base_url = "${fakes.vertex.url}"
max_retries = 0

[upstreams.aws]
kind = "bedrock"
region = "us-east-1"
base_url = "${fakes.bedrock.url}"
access_key_id_env = "FAKE_AWS_ACCESS_KEY_ID"
secret_access_key_env = "FAKE_AWS_SECRET_ACCESS_KEY"
max_retries = 0

[upstreams.az]
kind = "azure"
endpoint = "${fakes.azure.endpoint}"
api_key_env = "FAKE_AZURE_KEY"
responses = "native"
max_retries = 0

[aliases."${ALIASES.gemini}"]
targets = [{ upstream = "gem", model = "gemini-2.5-flash" }]

[aliases."${ALIASES.vertexGemini}"]
targets = [{ upstream = "vtx", model = "gemini-2.5-pro" }]

[aliases."${ALIASES.vertexClaude}"]
targets = [{ upstream = "vtx", model = "claude-sonnet-4-5" }]

[aliases."${ALIASES.bedrock}"]
targets = [{ upstream = "aws", model = "${BEDROCK_CLAUDE}" }]

[aliases."${ALIASES.azure}"]
targets = [{ upstream = "az", model = "gpt-4o-prod" }]
`

export async function startClientsGateway(options: ClientsGatewayOptions = {}): Promise<ClientsGateway> {
  const dir = tempDir('chatgate-clients-')
  const anthropic = fakeAnthropic({ apiKey: FAKE_ANTHROPIC_KEY, ...options.anthropic })
  const openai = fakeOpenAI({ apiKey: FAKE_OPENAI_KEY, ...options.openai })
  const responses = fakeOpenAIResponses({ apiKey: FAKE_OPENAI_KEY, ...options.responses })
  const cloud = startCloudFakes(dir.path, options)
  const config = writeConfig(
    dir.path,
    `
[tiers.t]
requests_per_minute = 10000
tokens_per_minute = 100000000
max_concurrent = 64

[upstreams.claude]
kind = "anthropic"
base_url = "${anthropic.url}"
api_key_env = "FAKE_ANTHROPIC_KEY"
max_retries = 0

[upstreams.gpt]
kind = "openai"
base_url = "${openai.url}"
api_key_env = "FAKE_OPENAI_KEY"
max_retries = 0

[upstreams.gpt_native]
kind = "openai"
base_url = "${responses.url}"
api_key_env = "FAKE_OPENAI_KEY"
responses = "native"
max_retries = 0

[upstreams.local]
kind = "mock"

[aliases."${ALIASES.anthropic}"]
targets = [{ upstream = "claude", model = "claude-sonnet-4-5" }]

[aliases."${ALIASES.anthropicFast}"]
targets = [{ upstream = "claude", model = "claude-haiku-4-5" }]

[aliases."${ALIASES.openai}"]
targets = [{ upstream = "gpt", model = "gpt-4o" }]

[aliases."${ALIASES.mock}"]
targets = [{ upstream = "local", model = "echo" }]

[aliases."${ALIASES.native}"]
targets = [{ upstream = "gpt_native", model = "gpt-5.6" }]

[aliases."${ALIASES.chat}"]
targets = [{ upstream = "gpt", model = "gpt-4o" }]
${cloudToml(cloud)}
${options.extraToml?.({ anthropic, openai }) ?? ''}
`,
  )
  let gateway: GatewayProcess
  try {
    gateway = await spawnGateway(
      {
        GATEWAY_DB: join(dir.path, 'gateway.sqlite'),
        GATEWAY_CONFIG: config,
        FAKE_ANTHROPIC_KEY,
        FAKE_OPENAI_KEY,
        FAKE_GEMINI_KEY,
        FAKE_VERTEX_CREDENTIALS: cloud.accountFile,
        FAKE_AWS_ACCESS_KEY_ID: FAKE_AWS.accessKeyId,
        FAKE_AWS_SECRET_ACCESS_KEY: FAKE_AWS.secretAccessKey,
        FAKE_AZURE_KEY,
        GATEWAY_SECRET: 'clients-test-secret-0123456789abcdef0123456789',
      },
      { expectFirstKey: true },
    )
  } catch (error) {
    anthropic.stop()
    openai.stop()
    responses.stop()
    cloud.stop()
    for (const other of options.others ?? []) other.stop()
    dir[Symbol.dispose]()
    throw error
  }
  return {
    gateway,
    url: gateway.url.replace(/\/$/, ''),
    key: gateway.firstKey!,
    anthropic,
    openai,
    responses,
    gemini: cloud.gemini,
    vertex: cloud.vertex,
    vertexClaude: cloud.vertexClaude,
    bedrock: cloud.bedrock,
    azure: cloud.azure,
    async stop() {
      await gateway.stop()
      anthropic.stop()
      openai.stop()
      responses.stop()
      cloud.stop()
      for (const other of options.others ?? []) other.stop()
      dir[Symbol.dispose]()
    },
  }
}

/** A docs page under docs/clients/. */
export const docPage = (name: string): string => readFileSync(join(ROOT, 'docs', 'clients', name), 'utf8')

/**
 * The code blocks of a docs page in a language (`sh`, `ts`...), in order. A block whose opening fence
 * line carries a tag (```ts verified-name) can be picked by that tag.
 */
export function docBlocks(page: string, lang: string): { tag: string; code: string }[] {
  const blocks: { tag: string; code: string }[] = []
  const fence = /^```(\S+)[^\S\n]*([^\n]*)\n([\s\S]*?)^```$/gm
  for (const match of page.matchAll(fence)) if (match[1] === lang) blocks.push({ tag: match[2]!.trim(), code: match[3]! })
  return blocks
}

/** The one block with this tag. */
export function docBlock(page: string, lang: string, tag: string): string {
  const found = docBlocks(page, lang).filter((block) => block.tag === tag)
  if (found.length !== 1) throw new Error(`expected one \`\`\`${lang} ${tag} block in the docs page, found ${found.length}`)
  return found[0]!.code
}

/** The docs pages write the gateway as it runs by default; a test's gateway listens elsewhere. */
export const DOCS_GATEWAY_URL = 'http://127.0.0.1:8080'

/**
 * Runs a TypeScript snippet from a docs page as a user would paste it into a file of their project
 * (bun, from the repository root so its packages resolve), with the gateway's URL in place of the
 * default one, the key in CHATGATE_KEY and `env` besides. Returns its exit code and output.
 */
export async function runSnippet(
  code: string,
  gatewayUrl: string,
  key: string,
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const source = code.replaceAll(DOCS_GATEWAY_URL, gatewayUrl)
  const proc = Bun.spawn(['bun', '-e', source], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', CHATGATE_KEY: key, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
    stdin: 'ignore',
  })
  const [stdout, stderr, exit] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code: exit, stdout, stderr }
}

/**
 * A fetch that records what a client sent (method, URL, headers, JSON body) and what came back
 * (status and headers), for the SDK clients that take a `fetch` option.
 */
export interface Exchange {
  method: string
  url: string
  headers: Headers
  body: any
  status: number
  responseHeaders: Headers
  /** The body of an error answer (status 400 and above); null otherwise. */
  errorBody: string | null
}

export function recordingFetch(): { fetch: typeof fetch; exchanges: Exchange[] } {
  const exchanges: Exchange[] = []
  const recording = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = input instanceof Request ? new Request(input, init) : new Request(String(input), init)
    const text = request.method === 'GET' ? '' : await request.clone().text()
    let body: unknown = null
    try {
      body = text ? JSON.parse(text) : null
    } catch {
      body = text
    }
    const response = await fetch(request)
    const errorBody = response.status >= 400 ? await response.clone().text() : null
    exchanges.push({
      method: request.method,
      url: request.url,
      headers: request.headers,
      body,
      status: response.status,
      responseHeaders: response.headers,
      errorBody,
    })
    return response
  }
  return { fetch: recording as typeof fetch, exchanges }
}

/** Runs `check`; if it throws, throws again with `context()` (what was sent, what came back) appended. */
export async function explained<T>(check: () => Promise<T>, context: () => string): Promise<T> {
  try {
    return await check()
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    throw new Error(`${message}\n--- context\n${context()}`)
  }
}

/** One line per exchange: status, method, URL, and the body's shape (thread, roles, tools). */
export function describeExchanges(exchanges: Exchange[]): string {
  return exchanges
    .map((e) => {
      const body = e.body ?? {}
      const shape = {
        thread: body.thread,
        roles: body.messages?.map(
          (m: { role: string; content: unknown }) =>
            `${m.role}:${Array.isArray(m.content) ? m.content.map((b: { type: string }) => b.type).join('+') : 'text'}`,
        ),
        tools: body.tools?.map((t: { name: string }) => t.name),
        system: body.system === undefined ? undefined : 'yes',
      }
      return `${e.status} ${e.method} ${e.url} ${JSON.stringify(shape)} beta=${e.headers.get('anthropic-beta')}${e.errorBody ? `\n    answer: ${e.errorBody}` : ''}`
    })
    .join('\n')
}

/** One line per call an upstream fake received: path, and the body's thread, roles and tools. */
export function describeCalls(calls: RecordedCall[]): string {
  return calls
    .map((call) => {
      const body = call.body ?? {}
      const roles = body.messages?.map(
        (m: { role: string; content: unknown; tool_calls?: unknown[] }) =>
          `${m.role}:${Array.isArray(m.content) ? m.content.map((b: { type: string }) => b.type).join('+') : typeof m.content}${m.tool_calls ? '+tool_calls' : ''}`,
      )
      const tools = body.tools?.map((t: { name?: string; function?: { name: string } }) => t.name ?? t.function?.name)
      return `${call.method} ${call.path}${call.search} ${JSON.stringify({ thread: body.thread, roles, tools, system: body.system === undefined ? undefined : 'yes' })}`
    })
    .join('\n')
}

/**
 * A proxy that lets nothing through, for a client that must reach nothing but the gateway: given as
 * its HTTP(S) proxy (with NO_PROXY exempting 127.0.0.1), it records the first line of each
 * connection (`CONNECT host:443 ...`) and refuses it at once, so a phone-home attempt neither leaves
 * the machine nor hangs.
 */
export function phoneHomeTrap() {
  const attempts: string[] = []
  const listener = Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      data(socket, data) {
        attempts.push(data.toString().split('\r\n')[0]!)
        socket.write('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n')
        socket.end()
      },
    },
  })
  return { url: `http://127.0.0.1:${listener.port}`, attempts, stop: () => listener.stop(true) }
}

/**
 * The kinds of upstream the Responses API clients are tried through (the compatibility matrix's
 * columns), each with its alias and the text its final answers carry (the mock repeats the prompt).
 */
export const RESPONSES_TARGETS: { kind: TargetKind; alias: string; marker: string | null }[] = [
  { kind: 'native', alias: ALIASES.native, marker: RESPONSES_MARKER },
  { kind: 'chat', alias: ALIASES.chat, marker: OPENAI_MARKER },
  { kind: 'anthropic', alias: ALIASES.anthropic, marker: ANTHROPIC_MARKER },
  { kind: 'mock', alias: ALIASES.mock, marker: null },
  { kind: 'gemini', alias: ALIASES.gemini, marker: GEMINI_MARKER },
  { kind: 'vertex', alias: ALIASES.vertexGemini, marker: VERTEX_MARKER },
  { kind: 'bedrock', alias: ALIASES.bedrock, marker: BEDROCK_MARKER },
  { kind: 'azure', alias: ALIASES.azure, marker: AZURE_RESPONSES_MARKER },
]

/**
 * The kinds of upstream the clients of the Messages API (and LangChain's and Vercel's Anthropic
 * providers) are tried through, each with its alias and the text its answers carry (null: the mock,
 * which repeats the prompt). Vertex AI is Claude on Vertex here. No `native` column: these clients
 * never send a Responses request, and an OpenAI upstream takes theirs as chat completions (`chat`).
 */
export const MESSAGES_TARGETS: { kind: TargetKind; alias: string; marker: string | null }[] = [
  { kind: 'chat', alias: ALIASES.openai, marker: OPENAI_MARKER },
  { kind: 'anthropic', alias: ALIASES.anthropic, marker: ANTHROPIC_MARKER },
  { kind: 'mock', alias: ALIASES.mock, marker: null },
  { kind: 'gemini', alias: ALIASES.gemini, marker: GEMINI_MARKER },
  { kind: 'vertex', alias: ALIASES.vertexClaude, marker: VERTEX_CLAUDE_MARKER },
  { kind: 'bedrock', alias: ALIASES.bedrock, marker: BEDROCK_MARKER },
  { kind: 'azure', alias: ALIASES.azure, marker: AZURE_CHAT_MARKER },
]

/** The same for the clients of the Gemini API: Vertex AI is a Gemini model there. */
export const GEMINI_API_TARGETS = MESSAGES_TARGETS.map((t) => (t.kind === 'vertex' ? { ...t, alias: ALIASES.vertexGemini, marker: VERTEX_MARKER } : t))

/** Why a client of the Messages or Gemini API has no `native` cell. */
export const NO_RESPONSES_REQUESTS = {
  target: 'native' as const,
  reason:
    'this client never sends a Responses request: an OpenAI upstream takes its requests as chat completions whether or not it has `responses = "native"` (the OpenAI-compatible chat column)',
}

/**
 * What a fake's final answer says after a tool loop whose tool printed `output`: each quotes the
 * tool result it got back, in its own words (Google's functionResponse is an object, which the
 * gateway makes `{output}` of a text result).
 */
export function toolLoopAnswer(marker: string, output: string): string {
  if (marker === BEDROCK_MARKER) return `${marker} tool=${output}`
  if (marker === GEMINI_MARKER || marker === VERTEX_MARKER) return `${marker} (the tool said: ${JSON.stringify({ output })})`
  return `${marker} (the tool said: ${output})`
}

/** What a fake answers a prompt without tools with: it repeats the prompt, in its own words. */
export const plainAnswer = (marker: string, prompt: string): string =>
  marker === BEDROCK_MARKER ? `${marker} tool=- user=${prompt}` : `${marker} heard: ${prompt}`

/** The structured answer every fake gives for the tests' weather schema (the mock repeats the prompt, which is this JSON). */
export const WEATHER_OBJECT = { city: 'sample city', temperature_c: 7, conditions: 'sunny' }

/** The weather tool of the Responses client tests: every fake calls it with this city; the mock when told by the directive. */
export const WEATHER = {
  city: 'Paris',
  /** What the tests' tool answers. */
  answer: 'sunny, 21 C in Paris',
  /** The mock calls a tool only when a user text says so. */
  directive: '[[tool:get_weather {"city":"Paris"}]]',
  /**
   * A fake's tool arguments: the city for get_weather; for any other tool the structured answer
   * (an Anthropic upstream gets structured output as one forced tool, whose input a model fills
   * with the schema's object).
   */
  toolInput: (name: string): Record<string, unknown> => (name === 'get_weather' ? { city: 'Paris' } : WEATHER_OBJECT),
}

/** One line per Responses API request a client sent: status, path, fields, item types, tool types. */
export function describeResponsesExchanges(exchanges: Exchange[]): string {
  return exchanges
    .map((e) => {
      const body = e.body ?? {}
      const items = Array.isArray(body.input) ? body.input.map((i: { type?: string; role?: string }) => i.type ?? `(${i.role})`) : typeof body.input
      const shape = { fields: Object.keys(body), items, tools: body.tools?.map((t: { type: string; name?: string }) => `${t.type}:${t.name ?? ''}`) }
      return `${e.status} ${e.method} ${e.url} ${JSON.stringify(shape)}${e.errorBody ? `\n    answer: ${e.errorBody}` : ''}`
    })
    .join('\n')
}

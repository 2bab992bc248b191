/**
 * A gateway in this process, on a real socket (127.0.0.1), in front of a fake Gemini API, a fake
 * Anthropic API, a fake OpenAI-compatible API and the mock, for the Gemini-native routes' tests and
 * their real clients (Gemini CLI, the Google GenAI SDK):
 *
 * | alias             | target                                                                  |
 * | ----------------- | ----------------------------------------------------------------------- |
 * | `gemini/flash`    | the fake Gemini API (kind gemini), model `gemini-2.5-flash`: passed through |
 * | `anthropic/smart` | the fake Anthropic API, model `claude-sonnet-4-5`: translated           |
 * | `openai/gpt`      | the fake OpenAI-compatible API, model `gpt-4o`: translated              |
 * | `local/echo`      | the mock: translated                                                    |
 * | `mixed/fallback`  | the fake Gemini API, then the fake Anthropic API (a fallback)           |
 *
 * In this process (the real-client tests spawn theirs, test/clients/harness.ts), so a test can reach
 * the gateway's own objects when it needs to.
 */
import { join } from 'node:path'
import { type FakeAnthropic, fakeAnthropic, type FakeAnthropicOptions } from '../support/fakes/anthropic'
import { type FakeGemini, fakeGemini, type FakeGeminiOptions } from '../support/fakes/gemini'
import { type FakeOpenAI, fakeOpenAI, type FakeOpenAIOptions } from '../support/fakes/openai'
import { type InProcessGateway, inProcessGateway, tempDir, writeConfig } from '../support/gateway'

export const ALIASES = {
  gemini: 'gemini/flash',
  anthropic: 'anthropic/smart',
  openai: 'openai/gpt',
  mock: 'local/echo',
  fallback: 'mixed/fallback',
  /** The Gemini fake under another model: a 429 with a retry delay rests its target, so the quota case has a target of its own. */
  limited: 'gemini/limited',
} as const

const GEMINI_KEY = 'gemini-fake-upstream-key'
const ANTHROPIC_KEY = 'sk-ant-fake-upstream-key'
const OPENAI_KEY = 'sk-openai-fake-upstream-key'

export interface GeminiGateway {
  g: InProcessGateway
  /** `http://127.0.0.1:<port>` (no path). */
  url: string
  key: string
  gemini: FakeGemini
  anthropic: FakeAnthropic
  openai: FakeOpenAI
  stop(): Promise<void>
}

export interface GeminiGatewayOptions {
  gemini?: FakeGeminiOptions
  anthropic?: FakeAnthropicOptions
  openai?: FakeOpenAIOptions
  /** More TOML (tiers, aliases) appended to the config. */
  extraToml?: string
  /** The key's tier's limits (default generous). */
  tier?: string
}

export async function startGeminiGateway(options: GeminiGatewayOptions = {}): Promise<GeminiGateway> {
  const dir = tempDir('chatgate-gemini-inbound-')
  const gemini = fakeGemini({ apiKey: GEMINI_KEY, ...options.gemini })
  const anthropic = fakeAnthropic({ apiKey: ANTHROPIC_KEY, ...options.anthropic })
  const openai = fakeOpenAI({ apiKey: OPENAI_KEY, ...options.openai })
  const config = writeConfig(
    dir.path,
    `
[tiers.t]
${options.tier ?? 'requests_per_minute = 10000\ntokens_per_minute = 100000000\nmax_concurrent = 64'}

[upstreams.gem]
kind = "gemini"
base_url = "${gemini.url}"
api_key_env = "FAKE_GEMINI_KEY"
max_retries = 0

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

[upstreams.local]
kind = "mock"

[aliases."${ALIASES.gemini}"]
targets = [{ upstream = "gem", model = "gemini-2.5-flash" }]

[aliases."${ALIASES.anthropic}"]
targets = [{ upstream = "claude", model = "claude-sonnet-4-5" }]

[aliases."${ALIASES.openai}"]
targets = [{ upstream = "gpt", model = "gpt-4o" }]

[aliases."${ALIASES.mock}"]
targets = [{ upstream = "local", model = "echo" }]

[aliases."${ALIASES.limited}"]
targets = [{ upstream = "gem", model = "gemini-2.5-flash-lite" }]

[aliases."${ALIASES.fallback}"]
targets = [{ upstream = "gem", model = "gemini-2.5-flash" }, { upstream = "claude", model = "claude-sonnet-4-5" }]
${options.extraToml ?? ''}
`,
  )
  const env = {
    GATEWAY_CONFIG: config,
    GATEWAY_DB: join(dir.path, 'gateway.sqlite'),
    FAKE_GEMINI_KEY: GEMINI_KEY,
    FAKE_ANTHROPIC_KEY: ANTHROPIC_KEY,
    FAKE_OPENAI_KEY: OPENAI_KEY,
    GATEWAY_SECRET: 'gemini-inbound-test-secret-0123456789abcdef0123',
  }
  let g: InProcessGateway
  try {
    g = await inProcessGateway({ env })
  } catch (error) {
    for (const fake of [gemini, anthropic, openai]) fake.stop()
    dir[Symbol.dispose]()
    throw error
  }
  return {
    g,
    url: g.listen(),
    key: g.key,
    gemini,
    anthropic,
    openai,
    async stop() {
      await g.close()
      for (const fake of [gemini, anthropic, openai]) fake.stop()
      dir[Symbol.dispose]()
    },
  }
}

/** The SSE chunks of a Gemini stream, parsed (`data:` lines; Google frames them with `\r\n\r\n`). */
export function sseChunks(text: string): any[] {
  return text
    .split(/\r?\n\r?\n/)
    .map((block) => block.trim())
    .filter((block) => block.startsWith('data:'))
    .map((block) => JSON.parse(block.slice(5).trim()))
}

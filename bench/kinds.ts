/**
 * The upstream kinds measured beside the openai kind: each kind's own fake server (bench/mock-<kind>.ts,
 * the same ten words and the same usage as bench/mock-upstream.ts), its upstream and alias in the
 * gateway's config, the variables that config names, and what wrk sends to the fake directly (the
 * kind's own request, its "direct" row) so each kind's overhead is measured over its own upstream.
 */
import { freePort, start, waitForHealthy } from './processes'

export interface KindMock {
  /** The kind's name in the report: "gemini", "bedrock". */
  kind: string
  /** The gateway alias routed to it. */
  alias: string
  /** The config's upstream and alias tables for it. */
  toml: string
  /** The variables the config names (placeholder secrets: the fakes check no credential). */
  env: Record<string, string>
  /** The fake, asked directly in the kind's own dialect. */
  direct: { url: string; path(stream: boolean): string; body(stream: boolean): string; headers: Record<string, string> }
}

const PROMPT = 'Say something about foxes.'

async function gemini(): Promise<KindMock> {
  const port = await freePort()
  start(['bun', 'bench/mock-gemini.ts', String(port)])
  await waitForHealthy(`http://127.0.0.1:${port}/`)
  return {
    kind: 'gemini',
    alias: 'bench/gemini',
    toml: `
[upstreams.mock_gemini]
kind = "gemini"
base_url = "http://127.0.0.1:${port}/v1beta"
api_key_env = "BENCH_GEMINI_KEY"

[aliases."bench/gemini"]
targets = [{ upstream = "mock_gemini", model = "gemini-bench" }]
`,
    env: { BENCH_GEMINI_KEY: 'bench-gemini-key' },
    direct: {
      url: `http://127.0.0.1:${port}`,
      path: (stream) => `/v1beta/models/gemini-bench:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
      body: () => JSON.stringify({ contents: [{ role: 'user', parts: [{ text: PROMPT }] }] }),
      headers: { 'x-goog-api-key': 'bench-gemini-key' },
    },
  }
}

async function bedrock(): Promise<KindMock> {
  const port = await freePort()
  start(['bun', 'bench/mock-bedrock.ts', String(port)])
  await waitForHealthy(`http://127.0.0.1:${port}/`)
  return {
    kind: 'bedrock',
    alias: 'bench/bedrock',
    toml: `
[upstreams.mock_bedrock]
kind = "bedrock"
region = "us-east-1"
base_url = "http://127.0.0.1:${port}"
access_key_id_env = "BENCH_AWS_ACCESS_KEY_ID"
secret_access_key_env = "BENCH_AWS_SECRET_ACCESS_KEY"

[aliases."bench/bedrock"]
targets = [{ upstream = "mock_bedrock", model = "anthropic.claude-sonnet-4-20250514-v1:0" }]
`,
    env: { BENCH_AWS_ACCESS_KEY_ID: 'AKIABENCHBENCHBENCH0', BENCH_AWS_SECRET_ACCESS_KEY: 'bench-secret-access-key' },
    direct: {
      url: `http://127.0.0.1:${port}`,
      path: (stream) => `/model/anthropic.claude-sonnet-4-20250514-v1:0/${stream ? 'converse-stream' : 'converse'}`,
      body: () => JSON.stringify({ messages: [{ role: 'user', content: [{ text: PROMPT }] }] }),
      headers: {},
    },
  }
}

/** Starts every kind's fake. */
export const startKindMocks = (): Promise<KindMock[]> => Promise.all([gemini(), bedrock()])

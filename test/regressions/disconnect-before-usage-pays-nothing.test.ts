import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { tempDir, writeConfig } from '../support/gateway'
import { HELD_USAGE, type HeldStreams, heldStreams } from '../support/held-streams'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { waitFor } from '../support/wait'
import { SETUP_MS, setup, teardown, TEARDOWN_MS, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

/**
 * Regression: a client that read a stream's content deltas and hung up before the usage chunk paid
 * nothing (usage recorded the request as an error with 0 tokens and $0), past any quota or budget,
 * while the provider billed for it. Now the gateway reads on for the usage for up to
 * `[routing] drain_ms`, and when none comes charges an estimate of the prompt and of what was generated.
 */
const ADMIN = 'admin-key-for-disconnect-tests-0123'

const config = (upstream: string, drainMs: number) => `
[routing]
drain_ms = ${drainMs}

[tiers.standard]
requests_per_minute = 1000
tokens_per_minute = 10000000
max_concurrent = 50

[tiers.tight]
requests_per_minute = 1000
tokens_per_minute = 10000000
max_concurrent = 50
monthly_token_quota = 1

[tiers.budget]
requests_per_minute = 1000
tokens_per_minute = 10000000
max_concurrent = 50
daily_budget_usd = 0.000001

[upstreams.oa]
kind = "openai"
base_url = "${upstream}"
api_key_env = "FAKE_UPSTREAM_KEY"

[upstreams.an]
kind = "anthropic"
base_url = "${upstream}"
api_key_env = "FAKE_UPSTREAM_KEY"

[aliases."t/oa"]
targets = [ { upstream = "oa", model = "gpt-held", price = { input = 1, output = 1 } } ]

[aliases."t/an"]
targets = [ { upstream = "an", model = "claude-held", price = { input = 1, output = 1 } } ]
`

type Api = 'chat' | 'messages'

/** The four ways a stream is relayed: passthrough and translated, for each inbound API. */
const ROUTES: { api: Api; alias: string; name: string }[] = [
  { api: 'chat', alias: 't/oa', name: 'chat completions passed through to an OpenAI-compatible upstream' },
  { api: 'chat', alias: 't/an', name: 'chat completions translated to Anthropic' },
  { api: 'messages', alias: 't/an', name: 'messages passed through to Anthropic' },
  { api: 'messages', alias: 't/oa', name: 'messages translated to an OpenAI-compatible upstream' },
]

async function createKey(gw: GatewayProcess, tier: string): Promise<string> {
  const response = await fetch(`${gw.url}/admin/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify({ name: `cut-${tier}`, tier }),
  })
  expect(response.status).toBe(201)
  return ((await response.json()) as { key: string }).key
}

/** The request id a tag's request is sent with, to find its log lines. */
const requestId = (tag: string) => tag.replaceAll(' ', '-').replaceAll('/', '.')

function request(gw: GatewayProcess, key: string, api: Api, alias: string, tag: string, signal?: AbortSignal): Promise<Response> {
  const body =
    api === 'chat'
      ? { model: alias, stream: true, messages: [{ role: 'user', content: tag }] }
      : { model: alias, stream: true, max_tokens: 256, messages: [{ role: 'user', content: tag }] }
  return fetch(`${gw.url}${api === 'chat' ? '/v1/chat/completions' : '/v1/messages'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-request-id': requestId(tag) },
    body: JSON.stringify(body),
    signal,
  })
}

/** Streams until the first deltas have arrived, then hangs up. */
async function readThenCut(gw: GatewayProcess, key: string, api: Api, alias: string, tag: string): Promise<void> {
  const controller = new AbortController()
  const response = await request(gw, key, api, alias, tag, controller.signal)
  if (response.status !== 200) throw new Error(`${response.status} ${await response.text()}\n${gw.output()}`)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let seen = ''
  while (!seen.includes('jumps over')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the stream ended before its first deltas: ${seen}`)
    seen += decoder.decode(value, { stream: true })
  }
  controller.abort()
}

interface Totals {
  requests: number
  errors: number
  prompt_tokens: number
  completion_tokens: number
  cost_usd: number
}

const totalsOf = async (gw: GatewayProcess, key: string): Promise<Totals> =>
  ((await (await fetch(`${gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json()) as { totals: Totals }).totals

const counted = (gw: GatewayProcess, key: string) =>
  waitFor(async () => ((await totalsOf(gw, key)).requests === 1 ? totalsOf(gw, key) : null), 'the cut request to be counted')

describe('a stream the caller cuts is charged', () => {
  const dir = tempDir('chatgate-cut-')
  let upstream: HeldStreams
  /** Drains for a minute: the usage the upstream sends after the cut is what is charged. */
  let patient: GatewayProcess
  /** Does not drain: the charge is the gateway's estimate. */
  let hasty: GatewayProcess

  setup(async () => {
    upstream = heldStreams()
    const env = (name: string, drainMs: number) => ({
      GATEWAY_DB: join(dir.path, `${name}.sqlite`),
      GATEWAY_CONFIG: writeConfig(dir.path, config(upstream.url, drainMs), `${name}.toml`),
      GATEWAY_ADMIN_KEY: ADMIN,
      FAKE_UPSTREAM_KEY: 'sk-fake-upstream',
      // The debug line that says a drain began: the upstream is released only after it.
      LOG_LEVEL: 'debug',
    })
    ;[patient, hasty] = await Promise.all([spawnGateway(env('patient', 60_000)), spawnGateway(env('hasty', 0))])
  }, SETUP_MS)

  teardown(async () => {
    await Promise.all([patient?.stop(), hasty?.stop()])
    upstream?.stop()
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  for (const { api, alias, name } of ROUTES) {
    test(`${name}: the usage the upstream sends after the cut is charged, exactly`, async () => {
      const key = await createKey(patient, 'standard')
      const tag = `drained ${api} ${alias}`
      await readThenCut(patient, key, api, alias, tag)
      await waitFor(
        () => patient.output().includes(`"request_id":"${requestId(tag)}","drain_ms":60000`),
        'the gateway to notice the caller left and begin draining',
      )
      upstream.release(tag)
      const totals = await counted(patient, key)
      expect(upstream.finished(tag)).toBe(true)
      expect(totals).toMatchObject({ requests: 1, errors: 1, ...HELD_USAGE })
      expect(totals.cost_usd).toBeCloseTo((HELD_USAGE.prompt_tokens + HELD_USAGE.completion_tokens) / 1e6, 12)
    })

    test(`${name}: with no usage in time, an estimate of the prompt and of what was generated is charged, and marked`, async () => {
      const key = await createKey(hasty, 'standard')
      const tag = `estimated ${api} ${alias}`
      await readThenCut(hasty, key, api, alias, tag)
      const totals = await counted(hasty, key)
      await waitFor(() => upstream.aborted(tag), 'the upstream stream to be aborted')
      // Anthropic's own stream says the prompt's size at its start; otherwise the prompt is estimated.
      if (api === 'messages' && alias === 't/an') expect(totals.prompt_tokens).toBe(HELD_USAGE.prompt_tokens)
      else expect(totals.prompt_tokens).toBeGreaterThan(0)
      // At least the text relayed before the cut, at four characters a token.
      expect(totals.completion_tokens).toBeGreaterThanOrEqual(Math.ceil(HELD_FIRST_CHARS / 4))
      expect(totals.cost_usd).toBeGreaterThan(0)
      await waitFor(() => hasty.output().includes('"usage_estimated":true'), 'the log line to mark the usage as estimated')
    })
  }

  test('quotas and budgets see the charge of a cut stream: the next request is refused', async () => {
    for (const [tier, code] of [
      ['tight', 'quota_exceeded'],
      ['budget', 'budget_exceeded'],
    ] as const) {
      const key = await createKey(hasty, tier)
      await readThenCut(hasty, key, 'chat', 't/oa', `spent ${tier}`)
      await counted(hasty, key)
      const next = await request(hasty, key, 'chat', 't/oa', `after ${tier}`)
      expect(next.status).toBe(429)
      expect(((await next.json()) as { error: { code: string } }).error.code).toBe(code)
    }
  })
})

const HELD_FIRST_CHARS = 'The quick brown fox jumps over '.length

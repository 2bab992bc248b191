import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { tempDir, writeConfig } from './support/gateway'
import { runCli, spawnGateway } from './support/process'
import { waitFor } from './support/wait'
import { TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const completion = (url: string, key: string, content: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content }] }),
  })

describe('durability', () => {
  test('every response the client received survives SIGKILL right after', async () => {
    using dir = tempDir()
    const env = { GATEWAY_DB: `${dir.path}/gateway.sqlite` }
    const first = await spawnGateway(env, { expectFirstKey: true })
    const key = first.firstKey!
    // The default first key is on the free tier (20 requests a minute).
    const N = 18
    let words = 0
    for (let i = 0; i < N; i++) {
      const content = `request number ${i}`
      const response = await completion(first.url, key, content)
      expect(response.status).toBe(200)
      await response.json()
      words += 3
    }
    // Streams too: the stream's [DONE] was read, so it must be counted.
    const stream = await fetch(`${first.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'local/echo', stream: true, messages: [{ role: 'user', content: 'one two' }] }),
    })
    expect(await stream.text()).toEndWith('data: [DONE]\n\n')
    expect(await first.stop('SIGKILL')).not.toBe(0)

    const expected = {
      requests: N + 1,
      errors: 0,
      prompt_tokens: words + 2,
      completion_tokens: words + 2,
      total_tokens: 2 * (words + 2),
      cost_usd: 0,
      cache_saved_usd: 0,
    }
    const report = async () => {
      const usage = await runCli(['usage', '--json'], env)
      expect(usage.code).toBe(0)
      return JSON.parse(usage.stdout) as { totals: Record<string, number>; data: Record<string, unknown>[] }
    }
    // The killed server never folded its journal: the CLI counts it, with the server still down.
    expect((await report()).totals).toEqual(expected)
    // The restarted server folds what is left, and nothing is counted twice.
    const second = await spawnGateway(env)
    const after = await report()
    expect(after.totals).toEqual(expected)
    expect(after.data).toHaveLength(1)
    expect(after.data[0]).toMatchObject({ alias: 'local/echo', upstream: 'local', key_prefix: key.slice(0, 12) })
    await second.stop()
    // Its output read to the end: the restarted server made no new first key.
    expect(second.firstKey).toBeNull()
  })

  test('SIGTERM drains: an in-flight request finishes, new connections are refused, exit code 0', async () => {
    using dir = tempDir()
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let held = 0
    const upstream = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch() {
        held++
        await gate
        return Response.json({
          id: 'x',
          object: 'chat.completion',
          created: 1,
          model: 'slow',
          choices: [{ index: 0, message: { role: 'assistant', content: 'late' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        })
      },
    })
    const config = writeConfig(
      dir.path,
      `
[tiers.t]
requests_per_minute = 100
tokens_per_minute = 100000
max_concurrent = 4
[upstreams.slow]
kind = "openai"
base_url = "http://127.0.0.1:${upstream.port}/v1"
[aliases."slow/one"]
targets = [{ upstream = "slow", model = "slow" }]
`,
    )
    const gateway = await spawnGateway({ GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: config }, { expectFirstKey: true })
    try {
      const inFlight = fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.firstKey}` },
        body: JSON.stringify({ model: 'slow/one', messages: [{ role: 'user', content: 'x' }] }),
      })
      // The request is in flight once the upstream holds it.
      await waitFor(() => held === 1, 'the upstream to hold the in-flight request')
      gateway.proc.kill('SIGTERM')
      // The gateway announces the drain as it stops listening (the line is written at the next log
      // flush, after the listener was closed in the same turn).
      await waitFor(
        () => gateway.output().includes('"msg":"draining in-flight requests"'),
        () => `the gateway to log that it drains; output:\n${gateway.output()}`,
      )
      expect(gateway.proc.exitCode).toBeNull()
      const refused = await fetch(`${gateway.url}/health`).then(
        (r) => r.status,
        () => 'refused',
      )
      expect(refused).toBe('refused')
      release()
      const response = await inFlight
      expect(response.status).toBe(200)
      expect(((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe('late')
      expect(await gateway.proc.exited).toBe(0)
      expect(gateway.output()).toContain('"msg":"stopped"')
    } finally {
      upstream.stop(true)
      gateway.proc.kill('SIGKILL')
    }
  })
})

import { expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { createKey } from '../support/cluster'
import { tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { describeWithServers, sharedPostgres } from '../support/servers'
import type { FakeUpstream } from '../support/upstream'
import { chatCalls, CONFIG, countingUpstream } from './upstream'

setDefaultTimeout(TEST_MS)

describeWithServers('the response cache of one instance on Postgres (no Redis)', ['postgres'], () => {
  const dir = tempDir()
  let upstream: FakeUpstream
  let gateway: GatewayProcess
  let env: Record<string, string>
  let key: string

  setup(async () => {
    upstream = countingUpstream()
    const databaseUrl = await (await sharedPostgres()).createDatabase()
    env = {
      DATABASE_URL: databaseUrl,
      GATEWAY_DB: join(dir.path, 'data', 'unused.sqlite'),
      GATEWAY_CONFIG: writeConfig(dir.path, CONFIG(upstream.url)),
      GATEWAY_ADMIN_KEY: 'admin-key-for-cluster-tests-0123',
    }
    gateway = await spawnGateway(env)
    key = (await createKey(gateway.url, { name: 'cache', tier: 't' })).key
  })
  teardown(async () => {
    await gateway.stop()
    upstream.stop()
    dir[Symbol.dispose]()
  })

  const chat = (content: string) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'openai/cached', messages: [{ role: 'user', content }] }),
    })

  test('kept in its table: a hit after a restart', async () => {
    expect((await chat('kept in postgres')).headers.get('x-svc-cache')).toBe('miss')
    expect((await chat('kept in postgres')).headers.get('x-svc-cache')).toBe('hit')
    // SIGTERM writes what waits before the process ends.
    await gateway.stop()
    gateway = await spawnGateway(env)
    const before = chatCalls(upstream)
    const response = await chat('kept in postgres')
    expect(response.headers.get('x-svc-cache')).toBe('hit')
    const hit = (await response.json()) as any
    expect(hit.choices[0].message.content).toBe('answer to kept in postgres')
    expect(chatCalls(upstream)).toBe(before)
  })
})

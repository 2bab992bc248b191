/**
 * `bun run cli requests show ID` and `requests tail`, beside a running server on the same SQLite
 * file: a record is there as soon as its request was answered (the CLI folds the server's journal),
 * and tail follows new records as they come.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { temporaryBuild } from '../../scripts/build'
import { ROOT, tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { type GatewayProcess, runCli, spawnGateway } from '../support/process'
import { waitFor } from '../support/wait'
import { ADMIN_KEY, createKey, MOCK, post, TIERS } from './support'

setDefaultTimeout(TEST_MS)

const dir = tempDir()
let env: Record<string, string>
let gateway: GatewayProcess
let key: { key: string; id: string; prefix: string }

setup(async () => {
  env = { GATEWAY_DB: join(dir.path, 'gateway.sqlite'), GATEWAY_CONFIG: writeConfig(dir.path, `${TIERS}${MOCK}`), GATEWAY_ADMIN_KEY: ADMIN_KEY }
  gateway = await spawnGateway(env)
  key = await createKey(gateway.url, 'open')
})

teardown(async () => {
  await gateway.stop()
  dir[Symbol.dispose]()
})

const chat = (id: string, model = 'local/echo') =>
  post(gateway.url, '/v1/chat/completions', key.key, { model, messages: [{ role: 'user', content: 'hello' }] }, { 'x-request-id': id })

test('requests show: the record at once, for a person or as JSON; an unknown id fails', async () => {
  expect((await chat('cli-show-1')).status).toBe(200)
  const text = await runCli(['requests', 'show', 'cli-show-1'], env)
  expect(text.code).toBe(0)
  expect(text.stdout).toContain('200  chat.completions  local/echo  local/echo')
  expect(text.stdout).toContain('attempt 1       local/echo from')
  const json = await runCli(['requests', 'show', 'cli-show-1', '--json'], env)
  expect(JSON.parse(json.stdout)).toMatchObject({ id: 'cli-show-1', key_id: key.id, status: 200, alias: 'local/echo' })
  const unknown = await runCli(['requests', 'show', 'no-such-request'], env)
  expect(unknown.code).toBe(1)
  expect(unknown.stderr).toContain('No request with id "no-such-request"')
  const wrong = await runCli(['requests', 'tail', '--status', 'often'], env)
  expect(wrong.code).toBe(2)
  expect(wrong.stderr).toContain('--status must be a code')
})

test('requests tail: the last records, then new ones as they are answered, filtered', async () => {
  expect((await chat('cli-tail-before')).status).toBe(200)
  const tail = Bun.spawn(['bun', temporaryBuild('cli'), 'requests', 'tail', '--json', '--key', key.id, '--status', '4xx', '--interval-ms', '50'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let out = ''
  const reading = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of tail.stdout) out += decoder.decode(chunk)
  })()
  try {
    const ids = () =>
      out
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { id: string }).id)
    expect((await chat('cli-tail-refused-1', 'nope/none')).status).toBe(404)
    await waitFor(
      () => ids().includes('cli-tail-refused-1'),
      () => `tail to print the first refusal; stdout:\n${out}`,
    )
    expect((await chat('cli-tail-served')).status).toBe(200)
    expect((await chat('cli-tail-refused-2', 'nope/none')).status).toBe(404)
    await waitFor(
      () => ids().includes('cli-tail-refused-2'),
      () => `tail to print the second refusal; stdout:\n${out}`,
    )
    // Only the key's 4xx, each once, oldest first.
    expect(ids()).toEqual(['cli-tail-refused-1', 'cli-tail-refused-2'])
  } finally {
    tail.kill()
    await tail.exited
    await reading
  }
})

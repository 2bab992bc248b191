import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { generateApiKey, hashApiKey, visiblePrefix } from '../../src/auth/keys'
import { openSqliteStores } from '../../src/storage/sqlite'
import { tempDir } from '../support/gateway'
import { type GatewayProcess, runCli, spawnGateway } from '../support/process'
import { SETUP_MS, setup, teardown, TEARDOWN_MS, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

// Issue 23, point 8a: key names accepted CR, LF and ESC, and `keys list` printed them raw, so one
// name could forge rows of the table (or recolour the terminal). Names are now printable text (400
// naming `name` on POST and PATCH /admin/keys; `keys create` refuses too), and the CLI escapes
// whatever it prints, names stored before the rule included.

const ADMIN_KEY = 'admin-key-for-key-name-tests-0123'
const FORGED_ROW = 'innocent\r\nkey_0000000000000000  sk-cg-AAAAAA  forged  pro'
const BAD_NAMES = [FORGED_ROW, 'line\nbreak', 'colour \x1b[31mred', 'tab\there', 'del\x7f', 'next\u0085line', 'sep\u2028arator', 'bidi \u202Eevil']

describe('key names are printable text, and the CLI escapes what it prints', () => {
  const dir = tempDir()
  const env = { GATEWAY_DB: join(dir.path, 'gateway.sqlite'), GATEWAY_ADMIN_KEY: ADMIN_KEY }
  let gateway: GatewayProcess
  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${gateway.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })

  setup(async () => {
    gateway = await spawnGateway(env, { expectFirstKey: true })
  }, SETUP_MS)
  teardown(async () => {
    await gateway?.stop()
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  test('POST /admin/keys refuses every unprintable name with 400 naming `name`, and creates nothing', async () => {
    for (const name of BAD_NAMES) {
      const response = await admin('POST', '/admin/keys', { name, tier: 'free' })
      expect(response.status).toBe(400)
      const body = (await response.json()) as { error: { type: string; param: string | null; message: string } }
      expect(body.error).toMatchObject({ type: 'invalid_request_error', param: 'name' })
      expect(body.error.message).toContain('printable')
    }
    const keys = (await (await admin('GET', '/admin/keys')).json()) as { data: { name: string }[] }
    expect(keys.data.map((k) => k.name)).toEqual(['first key'])
    // Printable names from any script still pass.
    expect((await admin('POST', '/admin/keys', { name: 'équipe 数据 👩‍💻', tier: 'free' })).status).toBe(201)
  })

  test('PATCH /admin/keys/{id} refuses an unprintable name with 400 naming `name`, and changes nothing', async () => {
    const created = (await (await admin('POST', '/admin/keys', { name: 'patched', tier: 'free' })).json()) as { id: string }
    for (const name of BAD_NAMES) {
      const response = await admin('PATCH', `/admin/keys/${created.id}`, { name })
      expect(response.status).toBe(400)
      expect(((await response.json()) as { error: { param: string | null } }).error.param).toBe('name')
    }
    expect(((await (await admin('GET', `/admin/keys/${created.id}`)).json()) as { name: string }).name).toBe('patched')
  })

  test('`keys create` refuses an unprintable name: non-zero exit, one line on stderr, no key', async () => {
    for (const name of [FORGED_ROW, 'colour \x1b[31mred']) {
      const result = await runCli(['keys', 'create', '--name', name, '--tier', 'free'], env)
      expect(result.code).not.toBe(0)
      expect(result.stdout).toBe('')
      expect(result.stderr).toContain('printable')
      expect(result.stderr.trimEnd().split('\n')).toHaveLength(1)
    }
    const listed = await runCli(['keys', 'list', '--json'], env)
    expect((JSON.parse(listed.stdout) as { name: string }[]).some((k) => k.name.startsWith('innocent') || k.name.startsWith('colour'))).toBe(false)
  })

  test('`keys list` escapes names stored before the rule: one line per key, no raw CR, LF or ESC', async () => {
    // Written straight into the store, as an earlier version let the admin API do.
    const stores = openSqliteStores(env.GATEWAY_DB)
    for (const [i, name] of [FORGED_ROW, 'colour \x1b[31mred'].entries()) {
      const key = generateApiKey()
      await stores.keys.insert({
        ...{ requestsPerMinute: null, tokensPerMinute: null, maxConcurrent: null, monthlyTokenQuota: null, dailyRequestQuota: null },
        ...{ dailyBudgetNanos: null, monthlyBudgetNanos: null, expiresAt: null, revokedAt: null },
        id: `key_legacy${i}`,
        prefix: visiblePrefix(key),
        hash: hashApiKey(key),
        name,
        tier: 'free',
        createdAt: Date.now(),
      })
    }
    await stores.close()
    const listed = await runCli(['keys', 'list'], env)
    expect(listed.code).toBe(0)
    const keys = (JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout) as unknown[]).length
    const lines = listed.stdout.trimEnd().split('\n')
    // The header and one line per key: the forged row is not a row.
    expect(lines).toHaveLength(1 + keys)
    expect(listed.stdout).not.toMatch(/[\r\x1b]/)
    expect(lines.filter((line) => line.startsWith('key_0000000000000000'))).toHaveLength(0)
    expect(listed.stdout).toContain('innocent\\r\\nkey_0000000000000000')
    expect(listed.stdout).toContain('colour \\u001b[31mred')
  })
})

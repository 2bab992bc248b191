import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { KeyService } from '../../src/auth/key-service'
import { loadGatewayConfig } from '../../src/config/load'
import { providerKinds } from '../../src/providers'
import { openSqliteStores } from '../../src/storage/sqlite'
import { UsageRecorder } from '../../src/usage/recorder'
import { tempDir } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'

setDefaultTimeout(TEST_MS)

const CHROMIUM = '/usr/bin/chromium'
const ADMIN_KEY = 'dashboard-admin-key-for-cache-0123'
const haveChromium = existsSync(CHROMIUM)
if (!haveChromium) console.warn(`cache dashboard test skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`)

describe.skipIf(!haveChromium)("the dashboard's spend view shows what the cache saved", () => {
  const dir = tempDir()
  let gateway: GatewayProcess
  let browser: Browser

  setup(async () => {
    // A paid request and two hits of its answer, in the last hour.
    const dbPath = join(dir.path, 'gateway.sqlite')
    const stores = openSqliteStores(dbPath)
    await stores.config.apply(loadGatewayConfig(null, providerKinds), Date.now(), () => null)
    const { record } = await new KeyService(stores.keys, null).create({ name: 'evals', tier: 'pro' })
    const recorder = await UsageRecorder.open(stores.usage, null)
    const entry = { keyId: record.id, alias: 'local/echo', error: false, latencyMs: 5, at: Date.now() - 20 * 60_000 }
    await Promise.all([
      recorder.record({ ...entry, upstream: 'local', promptTokens: 7, completionTokens: 3, costNanos: 1_500_000 }),
      recorder.record({ ...entry, upstream: '(cache)', promptTokens: 0, completionTokens: 0, costNanos: 0, cacheSavedNanos: 1_500_000 }),
      recorder.record({ ...entry, upstream: '(cache)', promptTokens: 0, completionTokens: 0, costNanos: 0, cacheSavedNanos: 1_500_000 }),
    ])
    await recorder.stop()
    await stores.close()
    gateway = await spawnGateway({ GATEWAY_DB: dbPath, GATEWAY_ADMIN_KEY: ADMIN_KEY })
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
    })
  })
  teardown(async () => {
    await browser?.close()
    await gateway?.stop()
    dir[Symbol.dispose]()
  })

  test('spent and saved side by side, with the total saved in the caption', async () => {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage()
    await page.goto(`${gateway.url}/dashboard`)
    await page.fill('#login-key', ADMIN_KEY)
    await page.click('#login button[type=submit]')
    await page.waitForSelector('#chart-spend[data-points="60"]', { timeout: 60_000 })
    expect(await page.locator('#chart-spend').getAttribute('data-total')).toBe('$0.0015')
    expect(await page.locator('#chart-spend').getAttribute('data-saved')).toBe('$0.003')
    expect(await page.locator('#spend-saved').textContent()).toBe(', $0.003 saved by the cache')
  })
})

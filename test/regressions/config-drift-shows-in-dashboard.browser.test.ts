import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { tempDir, writeConfig } from '../support/gateway'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { waitFor } from '../support/wait'
import { SETUP_MS, setup, teardown, TEARDOWN_MS, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

// Issue 23, point 7, in the dashboard: an instance whose config file differs from the config in
// force shows the differing entries on its dashboard; the instance that wrote it shows "in step".

const CHROMIUM = '/usr/bin/chromium'
const ADMIN_KEY = 'dashboard-drift-admin-key-0123456789'
const haveChromium = existsSync(CHROMIUM)
if (!haveChromium) console.warn(`config drift browser test skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`)

const configText = (rpm: number, withExtra: boolean) => `
[tiers.free]
requests_per_minute = ${rpm}
tokens_per_minute = 20000
max_concurrent = 4

[upstreams.local]
kind = "mock"

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
${withExtra ? '\n[aliases."local/extra"]\ntargets = [{ upstream = "local", model = "echo" }]\n' : ''}`

describe.skipIf(!haveChromium)('config drift on the dashboard', () => {
  const dir = tempDir()
  let a: GatewayProcess
  let b: GatewayProcess
  let browser: Browser

  setup(async () => {
    const env = (config: string) => ({ GATEWAY_DB: join(dir.path, 'gateway.sqlite'), GATEWAY_CONFIG: config, GATEWAY_ADMIN_KEY: ADMIN_KEY })
    a = await spawnGateway(env(writeConfig(dir.path, configText(20, true), 'a.toml')))
    b = await spawnGateway(env(writeConfig(dir.path, configText(30, false), 'b.toml')))
    await waitFor(
      async () => !((await (await fetch(`${a.url}/health`)).json()) as { config: { in_sync: boolean } }).config.in_sync,
      () => `A to see the drift; its output:\n${a.output()}`,
    )
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage', '--no-first-run', '--disable-sync'],
    })
  }, SETUP_MS)

  teardown(async () => {
    await browser?.close()
    await Promise.all([a?.stop(), b?.stop()])
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  const open = async (gateway: GatewayProcess) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    await page.goto(`${gateway.url}/dashboard`)
    await page.fill('#login-key', ADMIN_KEY)
    await page.click('#login button[type=submit]')
    return { page, context }
  }

  test('the drifted instance lists the differing entries; the one in force says it is in step', async () => {
    const drifted = await open(a)
    await drifted.page.waitForSelector('#config-state.drift', { timeout: 30_000 })
    expect(await drifted.page.locator('#config-state').textContent()).toBe('2 differences')
    expect(await drifted.page.locator('#config-drift').isVisible()).toBe(true)
    expect(await drifted.page.locator('#config-differences li').allTextContents()).toEqual([
      'tiers.free.requests_per_minute 20 → 30',
      'aliases."local/extra" removed',
    ])
    expect(await drifted.page.locator('#config-summary').textContent()).toContain('a.toml')
    await drifted.context.close()

    const inForce = await open(b)
    await inForce.page.waitForSelector('#config-state.in_sync', { timeout: 30_000 })
    expect(await inForce.page.locator('#config-state').textContent()).toBe('in step')
    expect(await inForce.page.locator('#config-drift').isVisible()).toBe(false)
    await inForce.context.close()
  })
})

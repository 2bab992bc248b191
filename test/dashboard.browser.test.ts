import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { KeyService } from '../src/auth/key-service'
import { loadGatewayConfig } from '../src/config/load'
import { providerKinds } from '../src/providers'
import { openSqliteStores } from '../src/storage/sqlite'
import { UsageRecorder } from '../src/usage/recorder'
import { ROOT, tempDir } from './support/gateway'
import { type GatewayProcess, spawnGateway } from './support/process'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const CHROMIUM = '/usr/bin/chromium'
const ADMIN_KEY = 'dashboard-admin-key-0123456789'
const haveChromium = existsSync(CHROMIUM)
if (!haveChromium) console.warn(`dashboard browser test skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`)

/**
 * How many minutes ago each seeded request was: 50, 50, 30 and 10 (three distinct minutes of the last
 * hour), each moved to this UTC day's first minutes when the day is younger than that, so "today"'s
 * columns count all four whatever the hour the suite runs (at 00:20 UTC the old times fell on the day before).
 */
function seededMinutesAgo(now: number): number[] {
  const sinceMidnight = Math.floor((now % 86_400_000) / 60_000)
  return [50, 50, 30, 10].map((ago, i) => Math.max(0, Math.min(ago, sinceMidnight - [0, 0, 1, 2][i]!)))
}

describe.skipIf(!haveChromium)('dashboard in a real browser', () => {
  const dir = tempDir()
  /** Distinct minutes with seeded traffic: 3, fewer only in a UTC day's first two minutes. */
  let activeMinutes = 0
  let gateway: GatewayProcess
  let browser: Browser

  setup(async () => {
    // Known traffic: requests in three distinct minutes of the last hour, on one key.
    const dbPath = join(dir.path, 'gateway.sqlite')
    const stores = openSqliteStores(dbPath)
    await stores.config.apply(loadGatewayConfig(null, providerKinds), Date.now(), () => null)
    const { record } = await new KeyService(stores.keys, null).create({ name: 'seeded', tier: 'pro', dailyBudgetNanos: 2_000_000_000 })
    const recorder = await UsageRecorder.open(stores.usage, null)
    const now = Date.now()
    const seeded = seededMinutesAgo(now)
    const writes = seeded.map((minutesAgo, i) =>
      recorder.record({
        keyId: record.id,
        alias: 'local/echo',
        upstream: 'local',
        error: i === 1,
        promptTokens: 7,
        completionTokens: 3,
        costNanos: 1_250_000,
        latencyMs: 12,
        at: now - minutesAgo * 60_000,
      }),
    )
    await Promise.all(writes)
    activeMinutes = new Set(seeded).size
    await recorder.stop()
    await stores.close()

    gateway = await spawnGateway({ GATEWAY_DB: dbPath, GATEWAY_ADMIN_KEY: ADMIN_KEY })
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-dev-shm-usage',
        '--no-first-run',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
  })

  teardown(async () => {
    await browser?.close()
    await gateway?.stop()
    dir[Symbol.dispose]()
  })

  test('log in, see the charts and tables, create a key and revoke it', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    const foreign: string[] = []
    page.on('request', (request) => {
      if (!request.url().startsWith(gateway.url)) foreign.push(request.url())
    })
    page.on('dialog', (dialog) => void dialog.accept())

    await page.goto(`${gateway.url}/dashboard`)
    await page.fill('#login-key', ADMIN_KEY)
    await page.click('#login button[type=submit]')

    // The hour view: 60 one-minute points, 3 of them with the seeded traffic.
    await page.waitForSelector(`#chart-requests[data-points="60"][data-active="${activeMinutes}"]`, { timeout: 60_000 })
    // Spend in USD: four requests of $0.00125 each, to the nano-dollar.
    await page.waitForSelector('#chart-spend[data-points="60"]')
    expect(await page.locator('#chart-spend').getAttribute('data-total')).toBe('$0.005')
    expect(await page.locator('#chart-requests').count()).toBe(1)
    expect(await page.locator('#chart-requests canvas').count()).toBeGreaterThan(0)
    await page.waitForSelector('#keys tbody tr')
    const seededRow = page.locator('#keys tbody tr', { hasText: 'seeded' })
    expect(await seededRow.locator('td').nth(3).textContent()).toBe('4')
    expect(await seededRow.locator('td').nth(4).textContent()).toBe('40')
    // Spend beside its budget: the key's own daily budget, no monthly one (the tier has none).
    expect(await seededRow.locator('td.spend-today').textContent()).toBe('$0.005 / $2')
    expect(await seededRow.locator('td.spend-month').textContent()).toBe('$0.005 / no budget')
    expect(await page.locator('#aliases tbody tr', { hasText: 'local/echo' }).locator('.badge').first().textContent()).toBe('closed')

    // The key never lands in a URL or a cookie.
    expect(page.url()).not.toContain(ADMIN_KEY)
    expect((await context.cookies()).length).toBe(0)

    await page.fill('#new-key-name', 'browser-made')
    await page.selectOption('#new-key-tier', 'standard')
    await page.fill('#new-key-daily-budget', '1.5')
    await page.click('#create-key button[type=submit]')
    const created = page.locator('#keys tbody tr', { hasText: 'browser-made' })
    await created.waitFor()
    expect(await page.locator('#new-key').textContent()).toMatch(/sk-cg-[A-Za-z0-9]{40}/)
    expect(await created.locator('.badge').textContent()).toBe('active')
    expect(await created.locator('td.spend-today').textContent()).toBe('$0 / $1.5')

    await created.locator('button.revoke').click()
    await page.waitForSelector('#keys tbody tr:has-text("browser-made") .badge.revoked')

    await page.screenshot({ path: join(ROOT, 'test/artifacts/dashboard.png'), fullPage: true })
    await page.setViewportSize({ width: 390, height: 844 })
    await page.waitForFunction('window.innerWidth === 390')
    await page.screenshot({ path: join(ROOT, 'test/artifacts/dashboard-phone.png'), fullPage: true })
    expect(foreign).toEqual([])
    await context.close()
  }, 120_000)

  test("the hour view is 60 points even when the clock ticks between reading the span's start and its end", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    // Date.now() 5 ms behind what `new Date()` reads, as if the clock ticked between two readings:
    // the chart read the clock once for the span's start and again for its end, and a span of
    // 3,600,005 ms held 61 minute buckets.
    await context.addInitScript(() => {
      const realNow = Date.now
      Date.now = () => realNow() - 5
    })
    const page = await context.newPage()
    await page.goto(`${gateway.url}/dashboard`)
    await page.fill('#login-key', ADMIN_KEY)
    const series = page.waitForRequest((request) => request.url().includes('/admin/usage/series'))
    await page.click('#login button[type=submit]')
    const asked = new URL((await series).url()).searchParams
    expect(Date.parse(asked.get('to')!) - Date.parse(asked.get('from')!)).toBe(3_600_000)
    await page.waitForSelector('#chart-requests[data-points]', { state: 'attached' })
    expect(await page.locator('#chart-requests').getAttribute('data-points')).toBe('60')
    await context.close()
  })
})

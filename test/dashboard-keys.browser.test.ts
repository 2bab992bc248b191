import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, chromium, type Page } from 'playwright-core'
import { tempDir } from './support/gateway'
import { seededName, seedKeys } from './support/many-keys'
import { type GatewayProcess, spawnGateway } from './support/process'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const CHROMIUM = '/usr/bin/chromium'
const ADMIN_KEY = 'dashboard-keys-admin-key-0123456789'
/** The most one key record can weigh in a listing: its fields at their longest. */
const MAX_RECORD_BYTES = 1200
const PAGE_SIZE = 50
const haveChromium = existsSync(CHROMIUM)
if (!haveChromium) console.warn(`dashboard keys browser test skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`)

/** What the page fetched from the admin API while it opened: each path and its body's size. */
interface Fetched {
  path: string
  bytes: number
}

/** The ids of the keys the table shows, in order. */
const keyIds = async (page: Page) => Promise.all((await page.locator('#keys tbody tr').all()).map((row) => row.getAttribute('data-key-id')))

describe.skipIf(!haveChromium)('the dashboard opens as fast with 50,000 keys as with 50', () => {
  const dir = tempDir()
  const gateways: Record<'many' | 'few', GatewayProcess | undefined> = { many: undefined, few: undefined }
  let browser: Browser

  setup(async () => {
    const many = join(dir.path, 'many.sqlite')
    const few = join(dir.path, 'few.sqlite')
    await Promise.all([seedKeys(many, 50_000), seedKeys(few, 50)])
    const spawn = (db: string) => spawnGateway({ GATEWAY_DB: db, GATEWAY_ADMIN_KEY: ADMIN_KEY })
    ;[gateways.many, gateways.few] = await Promise.all([spawn(many), spawn(few)])
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
    })
  })

  teardown(async () => {
    await browser?.close()
    await Promise.all([gateways.many?.stop(), gateways.few?.stop()])
    dir[Symbol.dispose]()
  })

  /** Opens the dashboard on `gateway`, logged in, once its keys table is filled; records every admin API answer. */
  async function open(gateway: GatewayProcess): Promise<{ page: Page; fetched: () => Promise<Fetched[]> }> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    const answers: Promise<Fetched>[] = []
    page.on('response', (response) => {
      const url = new URL(response.url())
      if (url.pathname.startsWith('/admin/')) answers.push(response.body().then((body) => ({ path: `${url.pathname}${url.search}`, bytes: body.length })))
    })
    await page.goto(`${gateway.url}/dashboard`)
    await page.fill('#login-key', ADMIN_KEY)
    await page.click('#login button[type=submit]')
    // Opened: the keys table and the charts are drawn.
    await page.waitForSelector('#keys-position:has-text("Keys 1 to 50")')
    await page.waitForSelector('#chart-requests[data-points="60"]')
    return { page, fetched: () => Promise.all(answers) }
  }

  test('the keys page reads one page of 50 keys, the same requests and the same bytes as with 50 keys', async () => {
    const many = await open(gateways.many!)
    const few = await open(gateways.few!)
    for (const { page } of [many, few]) expect(await page.locator('#keys tbody tr').count()).toBe(PAGE_SIZE)
    // Each request once: the overview reloads its series every 30 s, which a slow machine can reach
    // before the page has opened.
    const once = (fetched: Fetched[]) => {
      const seen = new Set<string>()
      return fetched.filter((f) => {
        const path = f.path.replace(/([?&](from|to)=)[^&]*/g, '$1T')
        return !seen.has(path) && !!seen.add(path)
      })
    }
    const [manyFetched, fewFetched] = (await Promise.all([many.fetched(), few.fetched()])).map(once) as [Fetched[], Fetched[]]
    // The same requests, of which one page of keys (limit 50) ...
    const paths = (fetched: Fetched[]) => fetched.map((f) => f.path.replace(/([?&](from|to)=)[^&]*/g, '$1T')).sort()
    expect(paths(manyFetched)).toEqual(paths(fewFetched))
    const keyPage = (fetched: Fetched[]) => fetched.filter((f) => f.path.startsWith('/admin/keys'))
    expect(keyPage(manyFetched).map((f) => f.path)).toEqual(['/admin/keys?limit=50'])
    // ... answered with bodies bounded by the page, not by how many keys there are.
    const [manyBytes, fewBytes] = [keyPage(manyFetched)[0]!.bytes, keyPage(fewFetched)[0]!.bytes]
    expect(manyBytes).toBeLessThanOrEqual(PAGE_SIZE * MAX_RECORD_BYTES)
    expect(Math.abs(manyBytes - fewBytes)).toBeLessThanOrEqual(MAX_RECORD_BYTES)
    const total = (fetched: Fetched[]) => fetched.reduce((sum, f) => sum + f.bytes, 0)
    expect(Math.abs(total(manyFetched) - total(fewFetched))).toBeLessThanOrEqual(MAX_RECORD_BYTES)
    // Only the larger listing has a next page.
    expect(await many.page.locator('#keys-next').isDisabled()).toBe(false)
    expect(await few.page.locator('#keys-next').isDisabled()).toBe(true)
    await few.page.close()

    const page = many.page
    const firstIds = await keyIds(page)
    await page.click('#keys-next')
    await page.waitForSelector('#keys-position:has-text("Keys 51 to 100")')
    const secondIds = await keyIds(page)
    expect(secondIds.length).toBe(PAGE_SIZE)
    expect(secondIds.some((id) => firstIds.includes(id))).toBe(false)
    await page.click('#keys-previous')
    await page.waitForSelector('#keys-position:has-text("Keys 1 to 50")')
    expect(await keyIds(page)).toEqual(firstIds)

    // The search runs on the server: one key of 50,000 by its name.
    await page.fill('#keys-search', seededName(31_415))
    await page.waitForSelector(`#keys-position:has-text('matching "${seededName(31_415)}"')`)
    expect(await page.locator('#keys tbody tr').count()).toBe(1)
    expect(await page.locator('#keys tbody tr td').nth(1).textContent()).toBe(seededName(31_415))

    // The charts' key filter suggests keys as one types, 20 at most, instead of listing every key.
    await page.fill('#filter-key', 'user-1')
    await page.waitForSelector('#filter-key-options option:nth-child(20)', { state: 'attached' })
    expect(await page.locator('#filter-key-options option').count()).toBe(20)
    const suggested = (await many.fetched()).filter((f) => f.path.includes('limit=20'))
    expect(suggested.length).toBeGreaterThan(0)
    for (const f of suggested) expect(f.bytes).toBeLessThanOrEqual(20 * MAX_RECORD_BYTES)
    await page.close()
  }, 120_000)
})

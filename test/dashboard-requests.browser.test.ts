import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, chromium } from 'playwright-core'
import { type FaultServer, faultServer } from './support/faults'
import { ROOT, tempDir, writeConfig } from './support/gateway'
import { type GatewayProcess, spawnGateway } from './support/process'
import { setup, teardown, TEST_MS } from './support/hooks'
import { waitFor } from './support/wait'

setDefaultTimeout(TEST_MS)

const CHROMIUM = '/usr/bin/chromium'
const ADMIN_KEY = 'dashboard-requests-admin-key-0123456789'
const haveChromium = existsSync(CHROMIUM)
if (!haveChromium) console.warn(`dashboard requests browser test skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`)

interface Created {
  id: string
  key: string
  prefix: string
}

interface LoggedRequest {
  id: string
  key_id: string | null
  attempts: { upstream: string; outcome: string | null }[]
}

describe.skipIf(!haveChromium)('the Requests page in a real browser', () => {
  const dir = tempDir()
  let faults: FaultServer
  let gateway: GatewayProcess
  let browser: Browser
  const keys: Record<'alpha' | 'beta', Created | undefined> = { alpha: undefined, beta: undefined }
  /** The request ids sent, by what happened to them. */
  const sent = { fallback: 'req-fallback-1', retried: 'req-retried-1', plain: 'req-plain-beta' }

  const admin = (path: string, init: RequestInit = {}) =>
    fetch(`${gateway.url}${path}`, { ...init, headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' } })

  const chat = (key: string, requestId: string, content: string) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': requestId, 'user-agent': 'dashboard-test/1' },
      body: JSON.stringify({ model: 'f/backed', messages: [{ role: 'user', content }] }),
    })

  setup(async () => {
    faults = faultServer()
    const config = writeConfig(
      dir.path,
      `[tiers.pro]
requests_per_minute = 1000
tokens_per_minute = 1000000
max_concurrent = 10

[upstreams.faulty]
kind = "openai"
base_url = "${faults.url}"
max_retries = 1
failure_threshold = 1000

[upstreams.good]
kind = "mock"

[aliases."f/backed"]
targets = [{ upstream = "faulty", model = "fm" }, { upstream = "good", model = "echo" }]

[request_log]
bodies = "all"
`,
    )
    gateway = await spawnGateway({ GATEWAY_DB: join(dir.path, 'gateway.sqlite'), GATEWAY_CONFIG: config, GATEWAY_ADMIN_KEY: ADMIN_KEY })
    for (const name of ['alpha', 'beta'] as const) {
      const response = await admin('/admin/keys', { method: 'POST', body: JSON.stringify({ name, tier: 'pro' }) })
      keys[name] = (await response.json()) as Created
    }
    // alpha: one request failing twice on `faulty` (500, then its retry) before `good` serves it, and
    // one that fails once and succeeds on its retry; beta: one served at once.
    for (const [key, id, content] of [
      [keys.alpha!.key, sent.fallback, '500#fallback'],
      [keys.alpha!.key, sent.retried, 'flaky:1#retried'],
      [keys.beta!.key, sent.plain, 'hello'],
    ] as const) {
      expect((await chat(key, id, content)).status).toBe(200)
    }
    await waitFor(async () => {
      const { data } = (await (await admin('/admin/requests')).json()) as { data: LoggedRequest[] }
      return Object.values(sent).every((id) => data.some((record) => record.id === id))
    }, 'the three requests in the request log')
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
    })
  })

  teardown(async () => {
    await browser?.close()
    await gateway?.stop()
    faults?.stop()
    dir[Symbol.dispose]()
  })

  test('the log as the page gets it: the fallback made three attempts, the retry two', async () => {
    const record = async (id: string) => (await (await admin(`/admin/requests/${id}`)).json()) as LoggedRequest
    expect((await record(sent.fallback)).attempts.map((a) => a.upstream)).toEqual(['faulty', 'faulty', 'good'])
    expect((await record(sent.retried)).attempts.map((a) => a.upstream)).toEqual(['faulty', 'faulty'])
    expect((await record(sent.plain)).key_id).toBe(keys.beta!.id)
  })

  test('open the Requests page, filter by a key, open a request and see its attempts on a timeline', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    await page.goto(`${gateway.url}/dashboard`)
    await page.fill('#login-key', ADMIN_KEY)
    await page.click('#login button[type=submit]')
    await page.click('nav a[href="#requests"]')

    // Every request, newest first.
    const rows = page.locator('#requests tbody tr')
    await page.waitForSelector(`#requests tbody tr[data-request-id="${sent.plain}"]`)
    expect(await rows.count()).toBe(3)
    expect(await rows.first().getAttribute('data-request-id')).toBe(sent.plain)

    // Filtered by a key typed as its name, then as its prefix.
    await page.fill('#requests-key', 'beta')
    await page.press('#requests-key', 'Enter')
    await page.waitForSelector('#requests[data-rows="1"]')
    expect(await rows.first().getAttribute('data-request-id')).toBe(sent.plain)
    await page.fill('#requests-key', keys.alpha!.prefix)
    await page.press('#requests-key', 'Enter')
    await page.waitForSelector('#requests[data-rows="2"]')
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-request-id')))).toEqual([sent.retried, sent.fallback])
    expect(await page.locator(`#requests tbody tr[data-request-id="${sent.fallback}"] td`).nth(5).textContent()).toBe('good (3)')

    // The other filters narrow it further, and let go again.
    await page.selectOption('#requests-upstream', 'faulty')
    await page.waitForSelector('#requests[data-rows="1"]')
    expect(await rows.first().getAttribute('data-request-id')).toBe(sent.retried)
    await page.selectOption('#requests-upstream', '')
    await page.selectOption('#requests-status', '5xx')
    await page.waitForSelector('#requests[data-rows="0"]')
    await page.selectOption('#requests-status', '2xx')
    await page.waitForSelector('#requests[data-rows="2"]')
    await page.fill('#requests-since', '2099-01-01T00:00:00')
    await page.waitForSelector('#requests[data-rows="0"]')
    await page.fill('#requests-since', '')
    await page.waitForSelector('#requests[data-rows="2"]')

    // The fallback opened: three attempts on the timeline, two failed on `faulty`, then `good`.
    await page.click(`#requests tbody tr[data-request-id="${sent.fallback}"]`)
    await page.waitForSelector(`#request-detail[data-loaded="${sent.fallback}"]`)
    expect(page.url()).toEndWith(`#requests/${sent.fallback}`)
    expect(await page.locator('#request-timeline').getAttribute('data-attempts')).toBe('3')
    const attempts = page.locator('#request-timeline .attempt')
    const labels = await attempts.locator('.attempt-label').allTextContents()
    expect(labels.map((label) => label.split(':')[0])).toEqual(['1. faulty / fm', '2. faulty / fm', '3. good / echo'])
    expect(await attempts.locator('.attempt-bar.failed').count()).toBe(2)
    expect(await attempts.locator('.attempt-bar.ok').count()).toBe(1)
    expect(labels[2]).toContain(': ok')
    // Usage, cost and the kept bodies beside them.
    const fields = await page.locator('#request-fields').textContent()
    expect(fields).toContain(keys.alpha!.prefix)
    expect(fields).toContain('dashboard-test/1')
    expect(fields).toMatch(/Tokens\d+ prompt, \d+ completion/)
    expect(fields).toContain('Cost$')
    expect(await page.locator('#request-bodies pre').first().textContent()).toContain('500#fallback')
    await page.screenshot({ path: join(ROOT, 'test/artifacts/dashboard-requests.png'), fullPage: true })

    // The address opens the same request in a new tab, once logged in there; back to the list keeps the filter.
    const shared = await context.newPage()
    await shared.goto(`${gateway.url}/dashboard#requests/${sent.retried}`)
    await shared.fill('#login-key', ADMIN_KEY)
    await shared.click('#login button[type=submit]')
    await shared.waitForSelector(`#request-detail[data-loaded="${sent.retried}"]`)
    expect(await shared.locator('#request-timeline').getAttribute('data-attempts')).toBe('2')
    await page.click('#request-detail a[href="#requests"]')
    await page.waitForSelector('#request-detail', { state: 'hidden' })
    expect(await rows.count()).toBe(2)
    await context.close()
  }, 120_000)
})

import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { tempDir } from './support/gateway'
import { TEST_MS } from './support/hooks'
import { spawnGateway } from './support/process'
import { waitFor } from './support/wait'

setDefaultTimeout(TEST_MS)

const ADMIN_KEY = 'admin-key-for-the-build-test-0123456789'

/**
 * `bun run start` runs the gateway built into one file (scripts/build.ts); the tests build theirs
 * in a temporary folder, away from the checkout. Either way, and from source, the gateway finds what
 * it reads at run time in the checkout: migrations, pages and their assets, the request log's worker.
 */
describe('the gateway built into one file, and from source', () => {
  for (const fromSource of [false, true]) {
    test(`${fromSource ? 'bun src/main.ts' : 'the build, in a temporary folder'}: migrations, pages, assets and the request log's worker are found`, async () => {
      using dir = tempDir()
      const gateway = await spawnGateway({ GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_ADMIN_KEY: ADMIN_KEY }, { expectFirstKey: true, fromSource })
      try {
        const key = gateway.firstKey!
        for (const path of [
          '/swagger',
          '/swagger/assets/swagger-ui-bundle.js',
          '/dashboard',
          '/dashboard/assets/dashboard.js',
          '/dashboard/assets/uPlot.min.css',
        ]) {
          const response = await fetch(`${gateway.url}${path}`)
          expect({ path, status: response.status, size: (await response.arrayBuffer()).byteLength > 100 }).toEqual({ path, status: 200, size: true })
        }
        const chat = await fetch(`${gateway.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'built or not' }] }),
        })
        expect(chat.status).toBe(200)
        expect(((await chat.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toContain('built or not')
        // The request log is written by a worker the gateway starts from its source file.
        const admin = { authorization: `Bearer ${ADMIN_KEY}` }
        await waitFor(
          async () => ((await (await fetch(`${gateway.url}/admin/requests`, { headers: admin })).json()) as { data: unknown[] }).data.length === 1 || null,
          () => 'the request in the request log',
        )
      } finally {
        await gateway.stop()
      }
    })
  }
})

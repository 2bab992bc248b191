/**
 * The 500 of a failure in the gateway itself, in OpenAI's error shape with `param` and `code` null.
 * No request makes a running gateway fail by itself, so a route that throws is dropped into the
 * routes of an in-process app: the same conventions that serve every route turn what it throws into
 * the answer.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createApp } from '../../src/app'
import { readEnv } from '../../src/config/env'
import { closeGateway, createGateway } from '../../src/gateway'
import { createLogger } from '../../src/log'
import { ROOT, tempDir } from '../support/gateway'
import { TEST_MS } from '../support/hooks'
import { openapiErrors } from '../support/openapi'

setDefaultTimeout(TEST_MS)

test('a route that throws: 500 api_error, an ErrorResponse with param and code null, no stack', async () => {
  const routes = tempDir('chatgate-conformance-routes-')
  const elysia = Bun.resolveSync('elysia', ROOT)
  mkdirSync(join(routes.path, 'v1'), { recursive: true })
  writeFileSync(
    join(routes.path, 'v1', 'crash.ts'),
    `import { Elysia } from '${elysia}'\nexport default () => new Elysia().post('', () => { throw new Error('a bug') })\n`,
  )
  const gateway = await createGateway({ env: readEnv({ GATEWAY_DB: ':memory:' }), log: createLogger('error', { write() {} }) })
  try {
    const app = await createApp(gateway, { routesDir: routes.path })
    const response = await app.handle(new Request('http://localhost/v1/crash', { method: 'POST' }))
    expect(response.status).toBe(500)
    const body = await response.json()
    expect(openapiErrors('ErrorResponse', body)).toBeNull()
    expect(body).toEqual({ error: { message: 'Internal server error', type: 'api_error', param: null, code: null } })
  } finally {
    await closeGateway(gateway)
    routes[Symbol.dispose]()
  }
})

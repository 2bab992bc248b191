import { expect, setDefaultTimeout, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createApp } from '../src/app'
import { readEnv } from '../src/config/env'
import { closeGateway, createGateway } from '../src/gateway'
import { discoverRoutes, toElysiaPath } from '../src/http/routes-loader'
import { createLogger } from '../src/log'
import { ROOT, tempDir } from './support/gateway'
import { TEST_MS } from './support/hooks'
import { ROUTE_TABLE_FILE, routeTableSource } from '../scripts/route-table'
import { ROUTE_TABLE } from '../src/route-table'

setDefaultTimeout(TEST_MS)

test('file paths become Elysia paths', () => {
  expect(toElysiaPath('/v1/models/[...id]')).toBe('/v1/models/*')
  expect(toElysiaPath('/admin/keys/[id]')).toBe('/admin/keys/:id')
  expect(toElysiaPath('/')).toBe('/')
})

test('the project routes folder holds one file per route', () => {
  const paths = discoverRoutes(join(ROOT, 'routes')).map((r) => r.path)
  expect(paths).toEqual(
    expect.arrayContaining(['/', '/health', '/v1/models', '/v1/models/:prefix', '/v1/models/:prefix/:name', '/v1/chat/completions', '/swagger/assets/:file']),
  )
})

test('src/route-table.ts mounts every route file under routes/, by its path (`bun scripts/route-table.ts` rewrites it)', async () => {
  expect(await Bun.file(ROUTE_TABLE_FILE).text()).toBe(routeTableSource())
  const discovered = discoverRoutes(join(ROOT, 'routes'))
  expect(ROUTE_TABLE.map((route) => route.path)).toEqual(discovered.map((route) => route.path))
  for (const [i, route] of discovered.entries()) expect(ROUTE_TABLE[i]!.factory).toBe((await import(route.file)).default)
})

test('a route file dropped into a routes folder is served under its path, with the gateway conventions', async () => {
  using dir = tempDir()
  const elysia = Bun.resolveSync('elysia', ROOT)
  mkdirSync(join(dir.path, 'hello'), { recursive: true })
  writeFileSync(
    join(dir.path, 'hello', '[name].ts'),
    `import { Elysia } from '${elysia}'
export default (gateway) => new Elysia()
  .get('', ({ params }) => ({ hello: params.name, brand: gateway.headers.tier }))
  .post('', () => { throw new Error('secret stack detail') })
`,
  )
  const gateway = await createGateway({ env: readEnv({ GATEWAY_DB: ':memory:', GATEWAY_HEADER_BRAND: 'acme' }), log: createLogger('error', { write() {} }) })
  try {
    const app = await createApp(gateway, { routesDir: dir.path })
    const response = await app.handle(new Request('http://localhost/hello/world'))
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ hello: 'world', brand: 'x-acme-tier' })
    expect(response.headers.get('x-acme-latency-ms')).toMatch(/^\d+$/)
    // A bug in a route is a 500 in the error shape, never a stack trace.
    const crash = await app.handle(new Request('http://localhost/hello/world', { method: 'POST' }))
    expect(crash.status).toBe(500)
    const body = await crash.text()
    expect(JSON.parse(body)).toEqual({ error: { message: 'Internal server error', type: 'api_error', param: null, code: null } })
    expect(body).not.toContain('secret stack detail')
    expect((await app.handle(new Request('http://localhost/v1/models'))).status).toBe(404)
  } finally {
    await closeGateway(gateway)
  }
})

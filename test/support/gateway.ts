import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/app'
import { readEnv } from '../../src/config/env'
import { createGateway, ensureFirstKey, type Gateway } from '../../src/gateway'
import { createLogger } from '../../src/log'

export const ROOT = join(import.meta.dir, '..', '..')

export function tempDir(prefix = 'chatgate-test-'): { path: string; [Symbol.dispose](): void } {
  const path = mkdtempSync(join(tmpdir(), prefix))
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) }
}

/** Writes a TOML config into `dir` and returns its path. */
export function writeConfig(dir: string, toml: string, name = 'gateway.toml'): string {
  const path = join(dir, name)
  writeFileSync(path, toml)
  return path
}

export interface InProcessGateway {
  gateway: Gateway
  app: Awaited<ReturnType<typeof createApp>>
  key: string
  request(path: string, init?: RequestInit): Promise<Response>
  /** Serves the app on a real socket (127.0.0.1, free port) in this process; returns its base URL. */
  listen(): string
  close(): Promise<void>
}

/** A gateway in this process (app.handle, no socket): for fast route and unit coverage. */
export async function inProcessGateway(options: { env?: Record<string, string>; now?: () => number } = {}): Promise<InProcessGateway> {
  const env = readEnv({ GATEWAY_DB: ':memory:', LOG_LEVEL: 'error', ...options.env })
  const gateway = await createGateway({ env, log: createLogger('error'), now: options.now })
  const key = await ensureFirstKey(gateway)
  if (key === null) throw new Error('expected a first key')
  const app = await createApp(gateway)
  let server: ReturnType<typeof Bun.serve> | null = null
  return {
    gateway,
    app,
    key,
    request: (path, init) => app.handle(new Request(`http://localhost${path}`, init)),
    listen() {
      server ??= Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: app.fetch })
      return `http://127.0.0.1:${server.port}`
    },
    async close() {
      void server?.stop(true)
      await gateway.stores.close()
    },
  }
}

export const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
})

export const chatBody = (content = 'hello brave new world', extra: Record<string, unknown> = {}) => ({
  model: 'local/echo',
  messages: [{ role: 'user', content }],
  ...extra,
})

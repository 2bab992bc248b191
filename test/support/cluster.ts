import { join } from 'node:path'
import { tempDir, writeConfig } from './gateway'
import { type GatewayProcess, spawnGateway } from './process'
import { type PostgresServer, type RedisServer, sharedPostgres, startPostgres, startRedis } from './servers'

export const ADMIN_KEY = 'admin-key-for-cluster-tests-0123'

/**
 * Several real gateway processes on one real Redis and one real Postgres database, as an operator
 * runs them behind a load balancer: the same config file, DATABASE_URL and REDIS_URL for all.
 *
 * The database is a new one, on the test process's shared Postgres unless the cluster is given a
 * server, or asked for one of its own (`postgres: 'own'`) because a test stops or restarts it. The
 * Redis is its own unless given.
 */
export interface Cluster {
  redis: RedisServer
  postgres: PostgresServer
  databaseUrl: string
  dir: string
  configPath: string
  /** The environment every instance gets, plus `extra`. */
  env(extra?: Record<string, string>): Record<string, string>
  /** Starts `count` instances at once (they migrate and sync the config together). */
  start(count: number, extra?: Record<string, string>): Promise<GatewayProcess[]>
  /** Stops every instance it started (SIGTERM) and both servers, and removes the files. */
  dispose(): Promise<void>
}

export async function startCluster(config: string, options: { redis?: RedisServer; postgres?: PostgresServer | 'own' } = {}): Promise<Cluster> {
  const dir = tempDir('chatgate-cluster-')
  const ownPostgres = options.postgres === 'own'
  const postgresServer = () => (options.postgres === 'own' ? startPostgres() : (options.postgres ?? sharedPostgres()))
  const [redis, postgres] = await Promise.all([options.redis ?? startRedis(), postgresServer()])
  const databaseUrl = await postgres.createDatabase()
  const configPath = writeConfig(dir.path, config)
  const started: GatewayProcess[] = []
  const env = (extra: Record<string, string> = {}) => ({
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    GATEWAY_CONFIG: configPath,
    // Local files (settles that wait for Redis) go beside this path.
    GATEWAY_DB: join(dir.path, 'data', 'unused.sqlite'),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    ...extra,
  })
  return {
    redis,
    postgres,
    databaseUrl,
    dir: dir.path,
    configPath,
    env,
    async start(count, extra) {
      const instances = await Promise.all(Array.from({ length: count }, () => spawnGateway(env(extra))))
      started.push(...instances)
      return instances
    },
    async dispose() {
      await Promise.all(started.map((g) => (g.proc.exitCode === null && g.proc.signalCode === null ? g.stop() : null)))
      await Promise.all([options.redis ? null : redis.dispose(), ownPostgres ? postgres.dispose() : null])
      dir[Symbol.dispose]()
    },
  }
}

export const adminFetch = (url: string, path: string, init: { method?: string; body?: unknown } = {}) =>
  fetch(`${url}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  })

/** Creates a key through the admin API of one instance; returns the key and its id. */
export async function createKey(url: string, body: Record<string, unknown>): Promise<{ key: string; id: string }> {
  const response = await adminFetch(url, '/admin/keys', { body })
  if (response.status !== 201) throw new Error(`creating a key failed: ${response.status} ${await response.text()}`)
  return (await response.json()) as { key: string; id: string }
}

export const chat = (url: string, key: string, content = 'hello there', model = 'local/echo') =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
  })

/** Usage totals for everything, as the admin API of one instance reports them (it folds first: exact). */
export async function usageTotals(
  url: string,
): Promise<{ requests: number; errors: number; prompt_tokens: number; completion_tokens: number; cost_usd: number }> {
  // Yesterday to tomorrow (UTC): a test that runs across midnight still sees all of its usage.
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)
  const response = await adminFetch(url, `/admin/usage?from=${day(-1)}&to=${day(1)}`)
  if (response.status !== 200) throw new Error(`usage failed: ${response.status} ${await response.text()}`)
  return ((await response.json()) as { totals: { requests: number; errors: number; prompt_tokens: number; completion_tokens: number; cost_usd: number } })
    .totals
}

/** An upstream that holds requests until released, and records how many it ever held at once. */
export function heldUpstream() {
  const held: (() => void)[] = []
  let inFlight = 0
  let most = 0
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const body = (await req.json()) as { model: string }
      inFlight++
      most = Math.max(most, inFlight)
      await new Promise<void>((resolve) => held.push(resolve))
      inFlight--
      return Response.json({
        id: 'chatcmpl-held',
        object: 'chat.completion',
        created: 1_700_000_000,
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'done' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    get held() {
      return held.length
    },
    get most() {
      return most
    },
    release: () => held.splice(0).forEach((resolve) => resolve()),
    stop: () => void server.stop(true),
  }
}

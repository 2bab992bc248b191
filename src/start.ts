import { readFileSync } from 'node:fs'
import type { GatewayEnv } from './config/env'
import { createApp } from './app'
import { closeGateway, createGateway, ensureFirstKey, type Gateway, reloadConfig, startBackground, startRollupPruning, VERSION, watchStores } from './gateway'
import { createLogger } from './log'
import { keepServingOnStrayRejections } from './stray-rejections'
import { MAX_UPSTREAM_CONNECTIONS } from './routing/connections'

/** Descriptors for everything but streams: the listener, database, journals, idle keep-alive sockets. */
const DESCRIPTORS_BESIDES_STREAMS = 256

/** The open-file limit in force (Bun raises the soft limit to the hard one as it starts), or null where /proc has none. */
function openFileLimit(): number | null {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'))
    const soft = Number(line?.split(/\s{2,}/)[1])
    return Number.isFinite(soft) ? soft : null
  } catch {
    return null
  }
}

/** What the operator should know about the bound on upstream connections at start: none, or warnings. */
function connectionWarnings(configured: number, fetchCap: string | null): string[] {
  const warnings = fetchCap === null ? [] : [fetchCap]
  if (configured > MAX_UPSTREAM_CONNECTIONS) {
    warnings.push(`[http] max_upstream_connections = ${configured} is above what the runtime can hold: ${MAX_UPSTREAM_CONNECTIONS} is in force`)
  }
  const bound = Math.min(configured, MAX_UPSTREAM_CONNECTIONS)
  const limit = openFileLimit()
  // Each stream holds two descriptors: its caller's socket and its upstream's.
  const streams = limit === null ? bound : Math.floor((limit - DESCRIPTORS_BESIDES_STREAMS) / 2)
  if (streams < bound) {
    warnings.push(
      `the open-file limit (${limit}) holds about ${streams} streams, fewer than [http] max_upstream_connections (${bound}); raise it (LimitNOFILE in a systemd unit, ulimit -n) or lower the bound`,
    )
  }
  return warnings
}

/** The start line (at once, not at the next periodic flush), and the first key when one was created. */
function announce(gateway: Gateway, version: string, port: number, firstKey: string | null): void {
  const { env, log } = gateway
  log.info(
    {
      version,
      port,
      host: env.host,
      // Never the URLs: they may carry credentials.
      database: env.databaseUrl === null ? env.dbPath : 'postgres (DATABASE_URL)',
      limits: env.redisUrl === null ? 'in memory' : 'redis (REDIS_URL)',
      config: gateway.settings.source,
      max_upstream_connections: gateway.serving.connections.limit,
    },
    `chatgate ${version} listening on http://${env.host}:${port}`,
  )
  log.flush()
  if (firstKey) {
    process.stdout.write(`\nNo API key existed, so one was created on tier "${gateway.routing.firstTier}". It is shown only this once:\n${firstKey}\n\n`)
  }
}

/** Starts the gateway (main.ts raised the fetch cap already): config, database, routes, listener, and a clean drain on SIGTERM/SIGINT. */
export async function start(env: GatewayEnv, fetchCapWarning: string | null): Promise<void> {
  const log = createLogger(env.logLevel)
  keepServingOnStrayRejections(log)
  const gateway = await createGateway({ env, log })
  // The bound as the config file loaded by the gateway gives it: the fetch cap left unraised (main.ts), the open-file limit.
  for (const warning of connectionWarnings(gateway.configFile.http.maxUpstreamConnections, fetchCapWarning)) log.warn(warning)
  const firstKey = await ensureFirstKey(gateway)
  const app = await createApp(gateway)
  const stopWatching = watchStores(gateway)
  startBackground(gateway)
  const stopPruning = startRollupPruning(gateway)

  const server = Bun.serve({
    hostname: env.host,
    port: env.port,
    fetch: app.fetch,
    // Never Bun's development error page, whatever NODE_ENV said before production.ts.
    development: false,
    // The gateway enforces GATEWAY_MAX_BODY_BYTES itself, with a JSON 413, without reading the
    // excess; Bun hands bodies over as streams, so no cap here (its own 413 has an empty body).
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    // Idle keep-alive connections close after this; requests that wait on an upstream are exempt
    // (holdConnection below), since Bun counts a request in flight with no bytes moving as idle.
    idleTimeout: env.idleTimeoutSeconds,
  })
  gateway.holdConnection = (request) => server.timeout(request, 0)
  // The peer's address, for throttling failed admin authentications per client.
  gateway.clientAddress = (request) => server.requestIP(request)?.address ?? null

  announce(gateway, VERSION, server.port ?? env.port, firstKey)

  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info({ signal }, 'draining in-flight requests')
    stopPruning()
    stopWatching()
    const forced = setTimeout(() => {
      log.warn('drain took over 30 s; closing remaining connections')
      void server.stop(true)
    }, 30_000)
    await server.stop(false)
    clearTimeout(forced)
    let code = 0
    try {
      await closeGateway(gateway)
    } catch (error) {
      // What was not folded stays in this process's journal; the next start folds it.
      log.error({ err: error }, 'folding the last usage failed; it stays in the journal for the next start')
      code = 1
    }
    gateway.observer.summarize()
    log.info('stopped')
    log.flush(() => process.exit(code))
  }
  process.on('SIGHUP', () => {
    reloadConfig(gateway).catch((error: unknown) => {
      log.error({ reason: (error as Error).message }, 'config reload refused; the old config stays in force')
    })
  })
  process.on('SIGTERM', () => void stop('SIGTERM'))
  process.on('SIGINT', () => void stop('SIGINT'))
}

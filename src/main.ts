import './production'
import { readFileSync } from 'node:fs'
import { type GatewayEnv, readEnv } from './config/env'
import { loadGatewayConfig } from './config/load'
import type { Gateway } from './gateway'
import { GatewayError } from './errors'
import { createLogger } from './log'
import { providerKinds } from './providers'
import { MAX_UPSTREAM_CONNECTIONS, RUNTIME_FETCH_CAP_MAX, runtimeFetchCap } from './routing/connections'

const FETCH_CAP_VAR = 'BUN_CONFIG_MAX_HTTP_REQUESTS'
/** Set on the process that replaced itself: a runtime that dropped the variable cannot make it loop. */
const FETCH_CAP_MARK = 'CHATGATE_FETCH_CAP_SET'

/**
 * Bun reads its cap on concurrent fetch calls (BUN_CONFIG_MAX_HTTP_REQUESTS, default 256; more wait
 * in its queue) once, as it starts: setting it in process.env later changes nothing (tried on Bun
 * 1.4.5). So when the configured bound needs more than the variable says, the process replaces
 * itself (execve: same pid, arguments and environment, the variable set) before it opens anything.
 * Returns what to warn about when it cannot; on success it does not return.
 */
function raiseFetchCap(maxUpstreamConnections: number): string | null {
  const needed = runtimeFetchCap(maxUpstreamConnections)
  const current = Number(process.env[FETCH_CAP_VAR])
  if (Number.isInteger(current) && current >= needed && current <= RUNTIME_FETCH_CAP_MAX) return null
  const unraised = `the runtime's cap on concurrent upstream requests stays at ${process.env[FETCH_CAP_VAR] ?? 256}; start the gateway with ${FETCH_CAP_VAR}=${needed}`
  if (process.env[FETCH_CAP_MARK] !== undefined || process.execve === undefined) return unraised
  try {
    process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
      ...process.env,
      [FETCH_CAP_VAR]: String(needed),
      [FETCH_CAP_MARK]: '1',
    })
  } catch (error) {
    return `${unraised} (replacing the process failed: ${(error as Error).message})`
  }
  return null
}

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

/**
 * Reads the bound on upstream connections before anything opens, and raises the runtime's cap on
 * concurrent fetch calls to match (which may replace the process). Returns what to warn about.
 */
function boundUpstreamConnections(env: GatewayEnv): string[] {
  const { maxUpstreamConnections } = loadGatewayConfig(env.configPath, providerKinds, env.vars).http
  return connectionWarnings(maxUpstreamConnections, raiseFetchCap(maxUpstreamConnections))
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

/** Starts the gateway: config, database, routes, listener, and a clean drain on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const env = readEnv()
  const warnings = boundUpstreamConnections(env)
  const log = createLogger(env.logLevel)
  for (const warning of warnings) log.warn(warning)
  // Loaded only now, so that a process that replaced itself above did not load them twice.
  const [{ createApp }, { closeGateway, createGateway, ensureFirstKey, reloadConfig, startBackground, startRollupPruning, VERSION, watchStores }] =
    await Promise.all([import('./app'), import('./gateway')])
  const gateway = await createGateway({ env, log })
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

main().catch((error: unknown) => {
  const message = error instanceof GatewayError ? error.message : `chatgate failed to start: ${(error as Error).stack ?? String(error)}`
  process.stderr.write(`${message}\n`)
  process.exit(1)
})

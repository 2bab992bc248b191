import './production'
import { createApp } from './app'
import { readEnv } from './config/env'
import { closeGateway, createGateway, ensureFirstKey, reloadConfig, startBackground, startRollupPruning, VERSION, watchStores } from './gateway'
import { GatewayError } from './errors'
import { createLogger } from './log'

/** Starts the gateway: config, database, routes, listener, and a clean drain on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const env = readEnv()
  const log = createLogger(env.logLevel)
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

  log.info(
    {
      version: VERSION,
      port: server.port,
      host: env.host,
      // Never the URLs: they may carry credentials.
      database: env.databaseUrl === null ? env.dbPath : 'postgres (DATABASE_URL)',
      limits: env.redisUrl === null ? 'in memory' : 'redis (REDIS_URL)',
      config: gateway.settings.source,
    },
    `chatgate ${VERSION} listening on http://${env.host}:${server.port}`,
  )
  // The start is announced at once, not at the next periodic flush.
  log.flush()
  if (firstKey) {
    process.stdout.write(`\nNo API key existed, so one was created on tier "${gateway.routing.firstTier}". It is shown only this once:\n${firstKey}\n\n`)
  }

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

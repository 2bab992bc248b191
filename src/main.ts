import { createApp } from './app'
import { readEnv } from './config/env'
import { createGateway, ensureFirstKey, reloadConfig, startRollupPruning, VERSION } from './gateway'
import { GatewayError } from './errors'
import { createLogger } from './log'

/** Starts the gateway: config, database, routes, listener, and a clean drain on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  const env = readEnv()
  const log = createLogger(env.logLevel)
  const gateway = createGateway({ env, log })
  const firstKey = ensureFirstKey(gateway)
  const app = await createApp(gateway)
  gateway.keyCache.watch()
  gateway.usage.start((error) => log.error({ err: error }, 'folding usage into the database failed; it stays in the journal and is retried in a second'))
  const stopPruning = startRollupPruning(gateway)

  const server = Bun.serve({
    hostname: env.host,
    port: env.port,
    fetch: app.fetch,
    // The gateway enforces its own (smaller) limit with a proper 413 body; this only caps memory.
    maxRequestBodySize: Math.max(env.maxBodyBytes * 4, 16 * 1024 * 1024),
    idleTimeout: 255,
  })

  log.info(
    { version: VERSION, port: server.port, host: env.host, database: env.dbPath, config: gateway.config.source },
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
    gateway.keyCache.stop()
    stopPruning()
    const forced = setTimeout(() => {
      log.warn('drain took over 30 s; closing remaining connections')
      void server.stop(true)
    }, 30_000)
    await server.stop(false)
    clearTimeout(forced)
    gateway.usage.stop()
    gateway.storage.close()
    log.info('stopped')
    log.flush(() => process.exit(0))
  }
  process.on('SIGHUP', () => {
    try {
      reloadConfig(gateway)
    } catch (error) {
      log.error({ reason: (error as Error).message }, 'config reload refused; the old config stays in force')
    }
  })
  process.on('SIGTERM', () => void stop('SIGTERM'))
  process.on('SIGINT', () => void stop('SIGINT'))
}

main().catch((error: unknown) => {
  const message = error instanceof GatewayError ? error.message : `chatgate failed to start: ${(error as Error).stack ?? String(error)}`
  process.stderr.write(`${message}\n`)
  process.exit(1)
})

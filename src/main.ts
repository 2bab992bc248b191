import './production'
import { readFileSync } from 'node:fs'
import { DEFAULT_UPSTREAM_CONNECTIONS } from './config/defaults'
import { readEnv } from './config/env'
import { GatewayError } from './errors'
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

/**
 * The bound on upstream connections, read from the config file alone and only for that field, so that
 * the process can replace itself before it loads anything heavy. A file that cannot be read or parsed,
 * or a value out of range, gives the default here: the full validation that follows names the fault.
 */
function configuredUpstreamConnections(path: string | null): number {
  if (path === null) return DEFAULT_UPSTREAM_CONNECTIONS
  try {
    const text = readFileSync(path, 'utf8')
    const raw = (path.endsWith('.json') ? JSON.parse(text) : Bun.TOML.parse(text)) as { http?: { max_upstream_connections?: unknown } }
    const bound = raw.http?.max_upstream_connections
    return typeof bound === 'number' && Number.isInteger(bound) && bound >= 1 && bound <= MAX_UPSTREAM_CONNECTIONS ? bound : DEFAULT_UPSTREAM_CONNECTIONS
  } catch {
    return DEFAULT_UPSTREAM_CONNECTIONS
  }
}

/**
 * The entry point: raises the runtime's fetch cap first (which may replace the process), and only
 * then loads the gateway (start.ts), so that a process replacing itself has loaded almost nothing.
 */
async function main(): Promise<void> {
  const env = readEnv()
  const fetchCapWarning = raiseFetchCap(configuredUpstreamConnections(env.configPath))
  const { start } = await import('./start')
  await start(env, fetchCapWarning)
}

main().catch((error: unknown) => {
  const message = error instanceof GatewayError ? error.message : `chatgate failed to start: ${(error as Error).stack ?? String(error)}`
  process.stderr.write(`${message}\n`)
  process.exit(1)
})

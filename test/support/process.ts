import type { Subprocess } from 'bun'
import { loadGatewayConfig } from '../../src/config/load'
import { providerKinds } from '../../src/providers'
import { runtimeFetchCap } from '../../src/routing/connections'
import { temporaryBuild } from '../../scripts/build'
import { ROOT } from './gateway'
import { waitFor } from './wait'

export interface GatewayProcess {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  url: string
  /** The first key, when the server printed one at start (from its output so far). */
  readonly firstKey: string | null
  output(): string
  /** Sends `signal`; resolves with the exit code once the process exited and its output was read to the end. */
  stop(signal?: NodeJS.Signals): Promise<number>
}

export interface SpawnOptions {
  /**
   * The server creates a first key at start (a new database) and prints it: wait until it did.
   * It prints the key after its listen line, so without this `firstKey` may not be there yet.
   */
  expectFirstKey?: boolean
  /**
   * Default true: start the server with BUN_CONFIG_MAX_HTTP_REQUESTS already at the value its config
   * needs, as an operator may. Without it the server works that value out, sets it and replaces
   * itself (execve) before it opens anything: the same process state either way, for the price of
   * starting twice (about a tenth of a second of CPU, on each of the suite's hundred-odd starts).
   * False for the tests of that replacement itself.
   */
  presetFetchCap?: boolean
  /** Run `bun src/main.ts` instead of the built gateway (scripts/build.ts): the same code, from source. */
  fromSource?: boolean
}

/** BUN_CONFIG_MAX_HTTP_REQUESTS as the server would set it for this environment (src/main.ts), or null when its config does not load (the server says why). */
function fetchCapFor(env: Record<string, string>): string | null {
  try {
    const config = loadGatewayConfig(env.GATEWAY_CONFIG || null, providerKinds, env)
    return String(runtimeFetchCap(config.http.maxUpstreamConnections))
  } catch {
    return null
  }
}

const FIRST_KEY = /^(sk-cg-[A-Za-z0-9]{40})$/m

/** Spawns the real server (built as `bun run start` builds it: scripts/build.ts) on a free port and waits until it listens. */
export async function spawnGateway(env: Record<string, string>, options: SpawnOptions = {}): Promise<GatewayProcess> {
  const fetchCap = options.presetFetchCap === false || 'BUN_CONFIG_MAX_HTTP_REQUESTS' in env ? null : fetchCapFor(env)
  const proc = Bun.spawn(['bun', options.fromSource ? 'src/main.ts' : temporaryBuild('main')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      PORT: '0',
      LOG_LEVEL: 'info',
      ...(fetchCap === null ? {} : { BUN_CONFIG_MAX_HTTP_REQUESTS: fetchCap }),
      ...env,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let text = ''
  let errors = ''
  // Both pipes are drained to their end, so the child never blocks on a full pipe, and `stop`
  // can wait until everything it wrote has been read.
  const drained = Promise.all([
    (async () => {
      const decoder = new TextDecoder()
      for await (const chunk of proc.stdout) text += decoder.decode(chunk, { stream: true })
    })(),
    (async () => {
      const decoder = new TextDecoder()
      for await (const chunk of proc.stderr) errors += decoder.decode(chunk, { stream: true })
    })(),
  ])
  const exitedEarly = (what: string): false => {
    if (proc.exitCode === null && proc.signalCode === null) return false
    throw new Error(`gateway exited (${proc.exitCode ?? proc.signalCode}) before ${what}:\n${text}\n${errors}`)
  }
  const listening = () => /listening on (http:\/\/[^"\s]+)/.exec(text)?.[1]
  const url = await waitFor(
    () => listening() ?? exitedEarly('listening'),
    () => `the gateway's "listening on" line; its output so far:\n${text}\n${errors}`,
  )
  const firstKey = () => FIRST_KEY.exec(text)?.[1] ?? null
  if (options.expectFirstKey) {
    await waitFor(
      () => firstKey() ?? exitedEarly('printing its first key'),
      () => `the gateway to print its first key; its output so far:\n${text}\n${errors}`,
    )
  }
  return {
    proc,
    url,
    get firstKey() {
      return firstKey()
    },
    output: () => text + errors,
    async stop(signal = 'SIGTERM') {
      proc.kill(signal)
      const code = await proc.exited
      await drained
      return code
    },
  }
}

/** Starts the real server (built: scripts/build.ts) where it is expected to refuse to start; returns its exit code and stderr. */
export async function startRefused(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const proc = Bun.spawn(['bun', temporaryBuild('main')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: '0', ...env },
    stdout: 'ignore',
    stderr: 'pipe',
  })
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
  return { code, stderr }
}

/** Runs the CLI (built: scripts/build.ts) with the given environment; returns its exit code and output. */
export async function runCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(['bun', temporaryBuild('cli'), ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, stdout, stderr }
}

import { describe } from 'bun:test'
import type { Subprocess } from 'bun'
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { constants, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { waitFor } from './wait'

// Real Redis and Postgres servers for tests, from Debian's packages: never mocks. Each binds to
// 127.0.0.1 on a free port and keeps its data in a fresh temp dir. A server not disposed of when the
// test process exits is killed and its dir removed by an exit handler, so a crashed run leaves no
// stray servers (a test process killed with SIGKILL runs no handler: that one case is not covered;
// and `bun test` 1.4.5 runs no 'exit' handler at all, so there the suites' own teardowns are what
// stop their servers). The Postgres most suites use, sharedPostgres(), is stopped by a watchdog
// process instead, which covers every way the test process can end.

export type ServerKind = 'redis' | 'postgres'

/** The account Debian's postgresql package creates: Postgres refuses to run as root, so as root it runs as this user. */
const POSTGRES_OS_USER = 'postgres'

const isRoot = () => process.getuid?.() === 0

/** A binary on PATH, else in /usr/bin (PATH may be minimal in a spawned test environment). */
function findBinary(name: string): string | null {
  const onPath = Bun.which(name)
  if (onPath) return onPath
  const fallback = join('/usr/bin', name)
  return existsSync(fallback) ? fallback : null
}

/** The last `lines` lines of a log file, for error messages; never throws. */
function logTail(path: string, lines = 30): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } catch {
    return `(no log at ${path})`
  }
}

/** A port nothing listens on right now: the kernel picks one for a throwaway listener. */
async function freePort(): Promise<number> {
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const port = server.port!
  await server.stop(true)
  return port
}

interface RunResult {
  code: number
  stdout: string
  stderr: string
}

async function run(cmd: string[], options: { cwd?: string; stdin?: string } = {}): Promise<RunResult> {
  const proc = Bun.spawn(cmd, {
    cwd: options.cwd,
    stdin: options.stdin === undefined ? 'ignore' : new TextEncoder().encode(options.stdin),
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, stdout, stderr }
}

/** Runs `cmd` and returns its stdout; a non-zero exit throws with both outputs (and `detail`, such as a log tail). */
async function runOk(cmd: string[], options: { cwd?: string; stdin?: string; detail?: () => string } = {}): Promise<string> {
  const result = await run(cmd, options)
  if (result.code !== 0) {
    const detail = options.detail ? `\n${options.detail()}` : ''
    throw new Error(`${cmd.join(' ')} exited ${result.code}:\n${result.stdout}${result.stderr}${detail}`)
  }
  return result.stdout
}

// What the exit handler still has to clean up: one synchronous function per running server.
const cleanups = new Set<() => void>()
let exitHandlerInstalled = false

function onExit(cleanup: () => void): void {
  if (!exitHandlerInstalled) {
    exitHandlerInstalled = true
    process.on('exit', () => {
      for (const cleanupOne of cleanups) {
        try {
          cleanupOne()
        } catch {
          // The process is exiting: clean up the others regardless.
        }
      }
    })
    // A signal ends the process without 'exit' handlers; and pg_ctl detaches Postgres into its own
    // session, so a Ctrl-C on the terminal does not reach it. Exit instead, with the signal's code.
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => process.exit(128 + constants.signals[signal]))
  }
  cleanups.add(cleanup)
}

// ---------------------------------------------------------------------------------------------
// Which servers can run here

interface PostgresBinaries {
  initdb: string
  pg_ctl: string
  psql: string
}

let postgresBinariesFound: PostgresBinaries | null | undefined

/** Debian installs each major version in /usr/lib/postgresql/<version>/bin: the highest one wins; else initdb on PATH. */
function postgresBinaries(): PostgresBinaries | null {
  if (postgresBinariesFound !== undefined) return postgresBinariesFound
  const fromDir = (bin: string): PostgresBinaries | null => {
    const binaries = { initdb: join(bin, 'initdb'), pg_ctl: join(bin, 'pg_ctl'), psql: join(bin, 'psql') }
    return Object.values(binaries).every((path) => existsSync(path)) && existsSync(join(bin, 'postgres')) ? binaries : null
  }
  let found: PostgresBinaries | null = null
  const base = '/usr/lib/postgresql'
  if (existsSync(base)) {
    const versions = readdirSync(base)
      .filter((name) => /^\d+(\.\d+)?$/.test(name))
      .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a))
    for (const version of versions) {
      found = fromDir(join(base, version, 'bin'))
      if (found) break
    }
  }
  if (!found) {
    const initdb = Bun.which('initdb')
    if (initdb) found = fromDir(dirname(initdb))
  }
  postgresBinariesFound = found
  return found
}

/** Why a server kind cannot be started here, or null when it can. */
export function redisMissing(): string | null {
  const missing = ['redis-server', 'redis-cli'].filter((name) => findBinary(name) === null)
  return missing.length === 0 ? null : `${missing.join(' and ')} not found on PATH or in /usr/bin (apt-get install redis-server)`
}

/** Why a server kind cannot be started here, or null when it can. */
export function postgresMissing(): string | null {
  if (!postgresBinaries())
    return 'Postgres binaries (initdb, pg_ctl, postgres, psql) not found in /usr/lib/postgresql/*/bin or on PATH (apt-get install postgresql)'
  if (isRoot()) {
    if (!findBinary('runuser')) return 'running as root, and runuser (to run Postgres as a non-root user) is not found'
    if (Bun.spawnSync(['id', '-u', POSTGRES_OS_USER], { stdout: 'ignore', stderr: 'ignore' }).exitCode !== 0) {
      return `running as root, and there is no "${POSTGRES_OS_USER}" OS user to run Postgres as (Postgres refuses to run as root)`
    }
  }
  return null
}

const warned = new Set<string>()

/**
 * For suites that need real servers: when a binary is missing, locally the suite is skipped with
 * the reason (warned once); with CI=true a missing server is a failure, so CI never passes by
 * skipping the suites it is meant to run.
 */
export function describeWithServers(name: string, needs: ServerKind[], body: () => void): void {
  const reasons = needs.map((kind) => (kind === 'redis' ? redisMissing() : postgresMissing())).filter((reason) => reason !== null)
  if (reasons.length === 0) {
    describe(name, body)
    return
  }
  const reason = reasons.join('; ')
  if (process.env.CI === 'true') {
    throw new Error(`${name}: needs real ${needs.join(' and ')} servers, but ${reason}. .ci/run installs them.`)
  }
  if (!warned.has(reason)) {
    warned.add(reason)
    console.warn(`suites needing real servers are skipped: ${reason}`)
  }
  describe.skip(`${name} (skipped: ${reason})`, body)
}

// ---------------------------------------------------------------------------------------------
// Redis

export interface RedisServer {
  /** redis://127.0.0.1:<port> */
  url: string
  port: number
  dir: string
  /** Stops it cleanly (SIGTERM: Redis flushes the append-only file and exits) and waits until the process exited; data stays in dir. */
  stop(): Promise<void>
  /** SIGKILL, waits for exit: a crash, losing at most what appendfsync had not synced yet. */
  kill(): Promise<void>
  /** Starts it again on the same port and dir; resolves once it answers PING. */
  start(): Promise<void>
  /** Runs redis-cli against it with args, returns stdout trimmed. */
  cli(...args: string[]): Promise<string>
  /** Stops it (if running) and removes its dir. */
  dispose(): Promise<void>
}

export interface RedisOptions {
  /** Default true: 'appendonly yes' with 'appendfsync everysec', so a stop and start keeps the data. */
  appendonly?: boolean
  /** Default 'noeviction': a full Redis refuses writes instead of silently dropping keys. */
  maxmemoryPolicy?: string
}

const isRunning = (proc: Subprocess | null): proc is Subprocess => proc !== null && proc.exitCode === null && proc.signalCode === null

/** Starts a real redis-server on 127.0.0.1 and a free port, with its data in a fresh temp dir (no RDB snapshots). */
export async function startRedis(options: RedisOptions = {}): Promise<RedisServer> {
  const missing = redisMissing()
  if (missing) throw new Error(`cannot start Redis: ${missing}`)
  const serverBin = findBinary('redis-server')!
  const cliBin = findBinary('redis-cli')!
  const { appendonly = true, maxmemoryPolicy = 'noeviction' } = options
  const dir = mkdtempSync(join(tmpdir(), 'chatgate-redis-'))
  const logPath = join(dir, 'redis.log')
  let port = await freePort()
  let proc: Subprocess | null = null
  const cleanup = () => {
    if (isRunning(proc)) proc.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  onExit(cleanup)

  const cli = async (...args: string[]) => (await runOk([cliBin, '-h', '127.0.0.1', '-p', String(port), ...args])).trim()

  /** One attempt: spawns the server and waits until it answers PING; 'port in use' when another process took the port. */
  const launch = async (): Promise<'started' | 'port in use'> => {
    const logStart = existsSync(logPath) ? statSync(logPath).size : 0
    const logFd = openSync(logPath, 'a')
    const child = Bun.spawn(
      [
        serverBin,
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--daemonize',
        'no',
        '--protected-mode',
        'no',
        '--appendonly',
        appendonly ? 'yes' : 'no',
        '--appendfsync',
        'everysec',
        '--save',
        '',
        '--maxmemory-policy',
        maxmemoryPolicy,
      ],
      { cwd: dir, stdin: 'ignore', stdout: logFd, stderr: logFd },
    )
    closeSync(logFd)
    // A server a test forgot to dispose of must not keep the test process alive: the exit handler kills it.
    child.unref()
    proc = child
    const logSinceLaunch = () => readFileSync(logPath, 'utf8').slice(logStart)
    const ready = await waitFor(
      async () => {
        if (!isRunning(child)) return logSinceLaunch().includes('Address already in use') ? 'port in use' : 'exited'
        const ping = await run([cliBin, '-h', '127.0.0.1', '-p', String(port), 'PING'])
        return ping.stdout.trim() === 'PONG' && 'started'
      },
      () => `redis-server on port ${port} to answer PING; its log:\n${logTail(logPath)}`,
      { intervalMs: 20 },
    )
    if (ready === 'exited') throw new Error(`redis-server exited (${child.exitCode ?? child.signalCode}) before answering PING; its log:\n${logTail(logPath)}`)
    return ready
  }

  try {
    if ((await launch()) === 'port in use') {
      port = await freePort()
      if ((await launch()) === 'port in use') throw new Error(`redis-server: port ${port} was taken twice in a row; its log:\n${logTail(logPath)}`)
    }
  } catch (error) {
    cleanup()
    cleanups.delete(cleanup)
    throw error
  }

  const server: RedisServer = {
    get url() {
      return `redis://127.0.0.1:${port}`
    },
    get port() {
      return port
    },
    dir,
    async stop() {
      if (!isRunning(proc)) return
      proc.kill('SIGTERM')
      await proc.exited
    },
    async kill() {
      if (!isRunning(proc)) return
      proc.kill('SIGKILL')
      await proc.exited
    },
    async start() {
      if (isRunning(proc)) return
      // The same port as before, so clients keep their url: no retry on another one.
      if ((await launch()) === 'port in use') throw new Error(`redis-server: port ${port} is now taken by another process; cannot restart on it`)
    },
    cli,
    async dispose() {
      await server.stop()
      cleanups.delete(cleanup)
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return server
}

// ---------------------------------------------------------------------------------------------
// Postgres

export interface PostgresServer {
  port: number
  /** postgres://postgres@127.0.0.1:<port>/<database> (default database 'postgres'); trust auth, no password. */
  url(database?: string): string
  /** Creates a new empty database with a unique name (test_<random>) and returns its url. */
  createDatabase(): Promise<string>
  /**
   * Runs SQL (one statement or a script, read from stdin) through psql against the database
   * (default 'postgres') and returns stdout trimmed: unaligned, tuples only and quiet (no command
   * tags), so `SELECT 1` returns '1'. The first error stops the script and throws.
   */
  psql(sql: string, database?: string): Promise<string>
  /** pg_ctl stop -m fast; waits until the server exited. */
  stop(): Promise<void>
  /** pg_ctl start again on the same port and data dir; resolves once it accepts connections. */
  start(): Promise<void>
  /** Stops it and removes its dir. */
  dispose(): Promise<void>
}

/** Starts a real Postgres (a fresh initdb cluster, trust auth, durability off for speed) on 127.0.0.1 and a free port. */
export async function startPostgres(options: { stopWhenProcessEnds?: boolean } = {}): Promise<PostgresServer> {
  const missing = postgresMissing()
  if (missing) throw new Error(`cannot start Postgres: ${missing}`)
  const bin = postgresBinaries()!
  // Postgres refuses to run as root: as root, the server-side tools run as the postgres OS user,
  // which then has to own the whole temp dir. psql is a client and runs as whoever we are.
  const asServerUser = (cmd: string[]) => (isRoot() ? [findBinary('runuser')!, '-u', POSTGRES_OS_USER, '--', ...cmd] : cmd)

  const dir = mkdtempSync(join(tmpdir(), 'chatgate-postgres-'))
  const dataDir = join(dir, 'data')
  const socketDir = join(dir, 'sockets')
  const logPath = join(dir, 'postgres.log')
  mkdirSync(socketDir, { mode: 0o700 })
  let port = 0
  let running = false

  const stopImmediately = () => {
    Bun.spawnSync(asServerUser([bin.pg_ctl, '-D', dataDir, '-m', 'immediate', '-w', 'stop']), { cwd: dir, stdout: 'ignore', stderr: 'ignore' })
  }
  const cleanup = () => {
    if (running) stopImmediately()
    rmSync(dir, { recursive: true, force: true })
  }
  onExit(cleanup)

  const url = (database = 'postgres') => `postgres://${POSTGRES_OS_USER}@127.0.0.1:${port}/${database}`
  const psql = async (sql: string, database?: string) =>
    (await runOk([bin.psql, '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1', '-d', url(database), '-f', '-'], { stdin: sql })).trim()

  /** One pg_ctl start; 'port in use' when another process took the port. */
  const launch = async (): Promise<'started' | 'port in use'> => {
    const logStart = existsSync(logPath) ? statSync(logPath).size : 0
    const serverOptions = [
      `-p ${port}`,
      `-k ${socketDir}`,
      '-c listen_addresses=127.0.0.1',
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
      '-c max_connections=200',
    ].join(' ')
    // Counted as running from here: pg_ctl detaches the server, so a test process that exits while
    // it starts (a timed-out hook) must still stop it in its exit handler, or it outlives the run.
    running = true
    const result = await run(asServerUser([bin.pg_ctl, '-D', dataDir, '-o', serverOptions, '-l', logPath, '-t', '20', '-w', 'start']), { cwd: dir })
    if (result.code !== 0) {
      // pg_ctl may have given up waiting on a server that is still starting: make sure none is left.
      stopImmediately()
      running = false
      const log = existsSync(logPath) ? readFileSync(logPath, 'utf8').slice(logStart) : ''
      if (log.includes('Address already in use')) return 'port in use'
      throw new Error(`pg_ctl start on port ${port} failed (${result.code}):\n${result.stdout}${result.stderr}\nits log:\n${logTail(logPath)}`)
    }
    await waitFor(
      async () => (await run([bin.psql, '-X', '-A', '-t', '-d', url(), '-c', 'SELECT 1'])).stdout.trim() === '1',
      () => `Postgres on port ${port} to accept connections; its log:\n${logTail(logPath)}`,
      { intervalMs: 20 },
    )
    return 'started'
  }

  try {
    if (isRoot()) await runOk(['chown', '-R', `${POSTGRES_OS_USER}:${POSTGRES_OS_USER}`, dir])
    await runOk(asServerUser([bin.initdb, '-D', dataDir, '-A', 'trust', '-U', POSTGRES_OS_USER, '-E', 'UTF8', '--locale=C', '--no-sync']), { cwd: dir })
    port = await freePort()
    if ((await launch()) === 'port in use') {
      port = await freePort()
      if ((await launch()) === 'port in use') throw new Error(`Postgres: port ${port} was taken twice in a row; its log:\n${logTail(logPath)}`)
    }
    if (options.stopWhenProcessEnds) stopWhenProcessEnds(asServerUser([bin.pg_ctl, '-D', dataDir, '-m', 'immediate', '-w', 'stop']), dir)
  } catch (error) {
    cleanup()
    cleanups.delete(cleanup)
    throw error
  }

  const server: PostgresServer = {
    get port() {
      return port
    },
    url,
    async createDatabase() {
      const name = `test_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`
      await psql(`CREATE DATABASE ${name}`)
      return url(name)
    },
    psql,
    async stop() {
      if (!running) return
      await runOk(asServerUser([bin.pg_ctl, '-D', dataDir, '-m', 'fast', '-t', '20', '-w', 'stop']), {
        cwd: dir,
        detail: () => `its log:\n${logTail(logPath)}`,
      })
      running = false
    },
    async start() {
      if (running) return
      // The same port as before, so clients keep their url: no retry on another one.
      if ((await launch()) === 'port in use') throw new Error(`Postgres: port ${port} is now taken by another process; cannot restart on it`)
    },
    async dispose() {
      await server.stop()
      cleanups.delete(cleanup)
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return server
}

// ---------------------------------------------------------------------------------------------
// One Postgres for the whole test process

/** Write ends of the watchdogs' stdin pipes: held until the test process ends, however it ends. */
const watchdogPipes: unknown[] = []

/**
 * Runs `stop` and removes `dir` once this process has ended: a watchdog process reads its stdin, a
 * pipe whose only write end this process holds, and the kernel closes that end when the process
 * ends in any way (a normal exit, an uncaught error, SIGKILL). It ignores SIGTERM, SIGINT and SIGHUP,
 * so a Ctrl-C on the terminal, or `bun test --isolate` ending the file's subprocesses (which also
 * closes the pipe), stops the server instead of orphaning it.
 */
function stopWhenProcessEnds(stop: string[], dir: string): void {
  const script = 'trap "" TERM INT HUP; cat >/dev/null; dir=$1; shift; "$@" >/dev/null 2>&1; rm -rf "$dir"'
  const watchdog = Bun.spawn(['sh', '-c', script, 'watchdog', dir, ...stop], { cwd: dir, stdin: 'pipe', stdout: 'ignore', stderr: 'ignore' })
  watchdog.unref()
  watchdogPipes.push(watchdog.stdin)
}

let shared: Promise<PostgresServer> | null = null

/**
 * The Postgres of this test process: started on first use and shared by every suite that needs only
 * databases of its own (`createDatabase`, a new empty one each time), so a run pays for initdb and a
 * server start once instead of once per suite. Suites see nothing of each other on it: each works in
 * its own database, and LISTEN/NOTIFY is per database. No test stops it (stop, start and dispose
 * throw): it lives until the test process ends, and then its watchdog stops it and removes its dir.
 * A suite that stops or restarts its Postgres starts one of its own with startPostgres.
 */
export function sharedPostgres(): Promise<PostgresServer> {
  shared ??= startPostgres({ stopWhenProcessEnds: true }).then(
    (server): PostgresServer => {
      const refuse = (what: string) => () => Promise.reject(new Error(`the shared Postgres is never ${what} by a test: start one of your own (startPostgres)`))
      return {
        get port() {
          return server.port
        },
        url: server.url,
        createDatabase: server.createDatabase,
        psql: server.psql,
        stop: refuse('stopped'),
        start: refuse('restarted'),
        dispose: refuse('disposed of'),
      }
    },
    (error: unknown) => {
      // The next suite tries again rather than inheriting this failure.
      shared = null
      throw error
    },
  )
  return shared
}

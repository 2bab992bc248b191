import type { Subprocess } from 'bun'
import { ROOT } from './gateway'

export interface GatewayProcess {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  url: string
  /** The first key, when the server created one at start. */
  firstKey: string | null
  output(): string
  stop(signal?: NodeJS.Signals): Promise<number>
}

/** Spawns the real server (`bun src/main.ts`) on a free port and waits until it listens. */
export async function spawnGateway(env: Record<string, string>): Promise<GatewayProcess> {
  const proc = Bun.spawn(['bun', 'src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let text = ''
  let errors = ''
  void (async () => {
    for await (const chunk of proc.stderr) errors += new TextDecoder().decode(chunk)
  })()
  const reader = proc.stdout.getReader()
  const decoder = new TextDecoder()
  const deadline = Date.now() + 15_000
  let url: string | null = null
  while (url === null) {
    if (Date.now() > deadline) throw new Error(`gateway did not start:\n${text}\n${errors}`)
    const { value, done } = await reader.read()
    if (done) throw new Error(`gateway exited before listening:\n${text}\n${errors}`)
    text += decoder.decode(value)
    url = /listening on (http:\/\/[^"\s]+)/.exec(text)?.[1] ?? null
  }
  // Keep draining stdout so the child never blocks on a full pipe.
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      text += decoder.decode(value)
    }
  })()
  await Bun.sleep(50)
  return {
    proc,
    url,
    firstKey: /^(sk-cg-[A-Za-z0-9]{40})$/m.exec(text)?.[1] ?? null,
    output: () => text + errors,
    async stop(signal = 'SIGTERM') {
      proc.kill(signal)
      return await proc.exited
    },
  }
}

/** Runs `bun run cli ...` with the given environment; returns its exit code and output. */
export async function runCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(['bun', 'src/cli.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, stdout, stderr }
}

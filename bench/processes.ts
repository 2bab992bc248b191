/** The bench's child processes and what it reads of them: free ports, health, memory, CPU. */
import type { Subprocess } from 'bun'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export const ROOT = join(import.meta.dir, '..')

/** Every child started, killed when the bench exits however it exits. */
const children: Subprocess[] = []
process.on('exit', () => children.forEach((child) => child.kill('SIGKILL')))
process.on('SIGINT', () => process.exit(130))

export async function freePort(): Promise<number> {
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
  const port = server.port!
  await server.stop(true)
  return port
}

export function start(cmd: string[], env: Record<string, string> = {}, stderr: 'inherit' | 'ignore' = 'inherit'): Subprocess {
  const child = Bun.spawn(cmd, { cwd: ROOT, env: { ...process.env, ...env }, stdout: 'ignore', stderr })
  children.push(child)
  return child
}

export async function waitForHealthy(url: string, timeoutMs = 15_000): Promise<number> {
  const started = performance.now()
  while (performance.now() - started < timeoutMs) {
    try {
      const response = await fetch(url)
      if (response.status < 500) return performance.now() - started
    } catch {}
    await Bun.sleep(5)
  }
  throw new Error(`${url} did not come up`)
}

/** A process's resident memory (VmRSS) or its peak (VmHWM), in MB. */
export function rssMb(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
  return kb / 1024
}

/** Clock ticks per second of /proc's CPU times (USER_HZ). */
const CLOCK_TICKS = 100

/** CPU seconds a process has used (user and system, every thread), from /proc: unlike throughput, not skewed by other load on the machine. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  // utime and stime, fields 14 and 15 of stat (11 and 12 after the command name), in clock ticks.
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
}

/**
 * Builds the gateway and the CLI into one file each, with their bytecode (`dist/main.js`,
 * `dist/cli.js`): a process then starts without reading and compiling a thousand modules, in about
 * half the time and CPU. The bundle reads its run-time files (migrations, Lua scripts, pages) from
 * the checkout it was built from (src/root.ts), so it may be written anywhere.
 * `bun scripts/build.ts [outdir] [--keep-route-table]` (default dist/); the route table is written
 * first, unless kept.
 */
import { mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT } from '../src/root'
import { ROUTE_TABLE_FILE, routeTableSource } from './route-table'

const ENTRY_POINTS = ['src/main.ts', 'src/cli.ts']

/**
 * Writes main.js and cli.js (and their .jsc bytecode) into `outdir`; throws with the bundler's
 * messages when it fails. `writeRouteTable` false leaves src/route-table.ts as it is (the tests
 * build what is checked in, and a test of their own says when the table is stale).
 */
export async function buildGateway(outdir: string, { writeRouteTable = true } = {}): Promise<void> {
  const table = routeTableSource()
  if (writeRouteTable && (await Bun.file(ROUTE_TABLE_FILE).text()) !== table) writeAtomically(ROUTE_TABLE_FILE, table)
  const result = await Bun.build({
    entrypoints: ENTRY_POINTS.map((entry) => `${ROOT}/${entry}`),
    outdir,
    target: 'bun',
    // Bytecode without a single executable needs CommonJS (Bun 1.4).
    format: 'cjs',
    bytecode: true,
    throw: false,
  })
  if (!result.success) throw new Error(`the build failed:\n${result.logs.map(String).join('\n')}`)
}

let temporaryDir: string | null = null

/**
 * The gateway or the CLI (`main` or `cli`) as `bun run start` builds them, built once per process in
 * a temporary folder that goes when the process ends: what the tests and the bench start. The route
 * table is used as checked in (a test says when it is stale). Synchronous, so any caller may ask.
 */
export function temporaryBuild(name: 'main' | 'cli'): string {
  if (temporaryDir === null) {
    const dir = mkdtempSync(join(tmpdir(), 'chatgate-build-'))
    const build = Bun.spawnSync(['bun', 'scripts/build.ts', dir, '--keep-route-table'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
    if (build.exitCode !== 0) throw new Error(`scripts/build.ts failed (${build.exitCode}):\n${build.stdout}\n${build.stderr}`)
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
    temporaryDir = dir
  }
  return join(temporaryDir, `${name}.js`)
}

/** Several instances started at once (docs/cluster.md) each build: each file is replaced whole, never seen half written. */
function writeAtomically(path: string, text: string): void {
  writeFileSync(`${path}.${process.pid}.tmp`, text)
  renameSync(`${path}.${process.pid}.tmp`, path)
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  const outdir = args.find((arg) => !arg.startsWith('--')) ?? `${ROOT}/dist`
  const staging = join(outdir, `.build-${process.pid}`)
  await buildGateway(staging, { writeRouteTable: !args.includes('--keep-route-table') })
  // Bytecode first: a start that reads the new script finds the bytecode made with it.
  for (const file of readdirSync(staging).sort((a, b) => Number(b.endsWith('.jsc')) - Number(a.endsWith('.jsc'))))
    renameSync(join(staging, file), join(outdir, file))
  rmSync(staging, { recursive: true, force: true })
}

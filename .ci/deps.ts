/**
 * The import rules (.dependency-cruiser.cjs), run so that they cannot pass on nothing: the run must
 * have read every .ts file under src/, routes/ and db/, or it fails. (dependency-cruiser that cannot
 * parse TypeScript sees no file at all, and then every rule holds.) Then the test suite's bounds
 * (test-bounds.ts): every hook and every test file states its own timeout; and the size rules
 * (sizes.ts): no code file over 350 lines, no function over 80.
 */
import { Glob } from 'bun'
import { resolve } from 'node:path'
import { checkAllSizes } from './sizes'
import { checkTestBounds } from './test-bounds'

const ROOT = resolve(import.meta.dir, '..')
const FOLDERS = ['src', 'routes', 'db']

const proc = Bun.spawn(
  ['bun', 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs', ...FOLDERS, '--config', '.dependency-cruiser.cjs', '--output-type', 'json'],
  { cwd: ROOT, stdout: 'pipe', stderr: 'inherit' },
)
const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
const result = JSON.parse(out) as {
  modules: { source: string }[]
  summary: { error: number; violations: { from: string; to: string; rule: { name: string } }[] }
}

const cruised = new Set(result.modules.map((module) => module.source))
const expected: string[] = []
for (const folder of FOLDERS) for (const file of new Glob(`${folder}/**/*.ts`).scanSync({ cwd: ROOT })) expected.push(file)
const missed = expected.filter((file) => !cruised.has(file))

for (const violation of result.summary.violations) console.error(`${violation.rule.name}: ${violation.from} -> ${violation.to}`)
if (missed.length > 0) console.error(`dependency rules did not read ${missed.length} of ${expected.length} files:\n  ${missed.join('\n  ')}`)
const bounds = checkTestBounds(ROOT)
for (const violation of bounds.violations) console.error(`test-bounds: ${violation}`)
const sizes = checkAllSizes(ROOT)
for (const violation of sizes.violations) console.error(`sizes: ${violation}`)
if (code !== 0 || result.summary.error > 0 || missed.length > 0 || bounds.violations.length > 0 || sizes.violations.length > 0) process.exit(1)
console.log(`dependency rules hold: ${expected.length} files read, ${result.summary.violations.length} violations`)
console.log(`test bounds hold: ${bounds.files} test files read, every hook and test file bounded`)
console.log(`sizes hold: ${sizes.files} files read, none over 350 lines, no function over 80`)

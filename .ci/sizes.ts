/**
 * The size rules, read from the syntax tree: no code file under src/, routes/ or db/ over 350 lines,
 * no function (declaration, method, arrow or expression, getters and constructors too) over 80
 * lines, counted from its first line to its last. Generated migrations (.sql, snapshots) are data.
 */
import { Glob } from 'bun'
import { parseSync } from '@swc/core'
import type { Node } from '@swc/core'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export const MAX_FILE_LINES = 350
export const MAX_FUNCTION_LINES = 80
const FOLDERS = ['src', 'routes', 'db']
const FUNCTIONS = new Set([
  'FunctionDeclaration',
  'FunctionExpression',
  'ArrowFunctionExpression',
  'ClassMethod',
  'Constructor',
  'GetterProperty',
  'SetterProperty',
  'MethodProperty',
])

function* walk(value: unknown): Generator<Node> {
  if (Array.isArray(value)) for (const item of value) yield* walk(item)
  else if (value !== null && typeof value === 'object') {
    if (typeof (value as Node).type === 'string') yield value as Node
    for (const child of Object.values(value)) if (child !== null && typeof child === 'object') yield* walk(child)
  }
}

/** Line numbers of a node's first and last byte; swc's spans count UTF-8 bytes from the parser's running offset. */
function linesOf(newlines: number[], base: number, node: Node): [number, number] {
  const { start, end } = (node as unknown as { span: { start: number; end: number } }).span
  const line = (offset: number) => {
    let low = 0
    let high = newlines.length
    while (low < high) {
      const mid = (low + high) >> 1
      if (newlines[mid]! < offset) low = mid + 1
      else high = mid
    }
    return low + 1
  }
  return [line(start - base), line(end - base - 1)]
}

/** The rule's violations in one file, as `path:line: what`. */
export function checkSizes(path: string, source: string): string[] {
  const found: string[] = []
  const lines = source.split('\n').length - (source.endsWith('\n') ? 1 : 0)
  if (lines > MAX_FILE_LINES) found.push(`${path}: ${lines} lines (at most ${MAX_FILE_LINES})`)
  const module = parseSync(source, { syntax: 'typescript', target: 'es2022' })
  const bytes = Buffer.from(source)
  const newlines: number[] = []
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 10) newlines.push(i)
  const base = (module as unknown as { span: { start: number } }).span.start
  for (const node of walk(module.body)) {
    if (!FUNCTIONS.has(node.type)) continue
    const [first, last] = linesOf(newlines, base, node)
    if (last - first + 1 > MAX_FUNCTION_LINES) found.push(`${path}:${first}: a function of ${last - first + 1} lines (at most ${MAX_FUNCTION_LINES})`)
  }
  return found
}

export function checkAllSizes(root: string): { files: number; violations: string[] } {
  const paths = FOLDERS.flatMap((folder) => [...new Glob(`${folder}/**/*.ts`).scanSync({ cwd: root })]).sort()
  return { files: paths.length, violations: paths.flatMap((path) => checkSizes(path, readFileSync(join(root, path), 'utf8'))) }
}

if (import.meta.main) {
  const { files, violations } = checkAllSizes(join(import.meta.dir, '..'))
  for (const violation of violations) console.error(`sizes: ${violation}`)
  console.log(`${files} files read, ${violations.length} over the size rules`)
}

/**
 * The test suite's bounds must not depend on how it was started: a bare `bun test` gives every test
 * and hook 5 s, `bun test --timeout N` gives N, and a suite that passes only with the flag fails on
 * a busy machine for whoever forgets it. So, in every .ts file under test/:
 *
 * - `beforeAll`, `afterAll`, `beforeEach` and `afterEach` from bun:test are called with an explicit
 *   bound (a second argument); test/support/hooks.ts wraps them with one (`setup`, `teardown`, ...);
 * - each *.test.ts calls `setDefaultTimeout(...)` at its top level before it registers anything:
 *   Bun applies it only to the tests and hooks registered after it, in that file alone.
 *
 * Read from the syntax tree (@swc/core, which dependency-cruiser already uses), so a call split over
 * several lines or an import renamed with `as` is seen like any other.
 */
import { Glob } from 'bun'
import { parseSync } from '@swc/core'
import type { Module, ModuleItem, Node } from '@swc/core'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

const HOOKS = new Set(['beforeAll', 'afterAll', 'beforeEach', 'afterEach'])
/** The one file that may call the hooks its own way: it is where the bounds are given. */
const HOOKS_FILE = 'test/support/hooks.ts'
/** What may stand above `setDefaultTimeout(...)`: statements that register no test or hook. */
const DECLARATIONS = new Set([
  'ImportDeclaration',
  'VariableDeclaration',
  'FunctionDeclaration',
  'ClassDeclaration',
  'TsInterfaceDeclaration',
  'TsTypeAliasDeclaration',
  'TsEnumDeclaration',
  'ExportDeclaration',
  'EmptyStatement',
])

/** Local names that stand for bun:test's hooks and setDefaultTimeout in one module (imports renamed with `as` included). */
function bunTestNames(module: Module) {
  const names = new Map<string, string>()
  const namespaces = new Set<string>()
  for (const item of module.body) {
    if (item.type !== 'ImportDeclaration' || item.source.value !== 'bun:test') continue
    for (const specifier of item.specifiers) {
      if (specifier.type === 'ImportNamespaceSpecifier') namespaces.add(specifier.local.value)
      else if (specifier.type === 'ImportSpecifier') names.set(specifier.local.value, specifier.imported?.value ?? specifier.local.value)
    }
  }
  return { names, namespaces }
}

/** The bun:test function a call calls (`beforeAll(...)`, `renamed(...)`, `bunTest.beforeAll(...)`), or null. */
function calledName(node: Node, names: Map<string, string>, namespaces: Set<string>): string | null {
  if (node.type !== 'CallExpression') return null
  const callee = (node as unknown as { callee: Node & { value?: string; object?: Node & { value?: string }; property?: Node & { value?: string } } }).callee
  if (callee.type === 'Identifier') return names.get(callee.value!) ?? null
  if (callee.type === 'MemberExpression' && callee.object?.type === 'Identifier' && namespaces.has(callee.object.value!)) return callee.property?.value ?? null
  return null
}

/** Every node of the tree, depth first. */
function* walk(value: unknown): Generator<Node> {
  if (Array.isArray(value)) for (const item of value) yield* walk(item)
  else if (value !== null && typeof value === 'object') {
    if (typeof (value as Node).type === 'string') yield value as Node
    for (const child of Object.values(value)) if (child !== null && typeof child === 'object') yield* walk(child)
  }
}

/** The line of a node: swc's spans count UTF-8 bytes from 1 at the start of each parsed file. */
function lineOf(bytes: Buffer, node: Node): number {
  const offset = Math.max(0, ((node as unknown as { span: { start: number } }).span.start ?? 1) - 1)
  return bytes.subarray(0, offset).toString('utf8').split('\n').length
}

/** Whether a top-level item is a `setDefaultTimeout(...)` call. */
function setsDefaultTimeout(item: ModuleItem, names: Map<string, string>, namespaces: Set<string>): boolean {
  return item.type === 'ExpressionStatement' && calledName(item.expression, names, namespaces) === 'setDefaultTimeout'
}

/** The rule's violations in one file, as `path:line: what`. */
export function checkFile(path: string, source: string): string[] {
  const module = parseSync(source, { syntax: 'typescript', target: 'es2022' })
  const bytes = Buffer.from(source)
  const { names, namespaces } = bunTestNames(module)
  const found: string[] = []
  if (path !== HOOKS_FILE) {
    for (const node of walk(module.body)) {
      const name = calledName(node, names, namespaces)
      if (name !== null && HOOKS.has(name) && (node as unknown as { arguments: unknown[] }).arguments.length < 2) {
        found.push(`${path}:${lineOf(bytes, node)}: ${name}() without a bound: use setup/teardown/setupEach/teardownEach from test/support/hooks.ts`)
      }
    }
  }
  if (path.endsWith('.test.ts')) {
    const first = module.body.findIndex((item) => setsDefaultTimeout(item, names, namespaces))
    const before = module.body.slice(0, first === -1 ? module.body.length : first).find((item) => !DECLARATIONS.has(item.type))
    if (first === -1) found.push(`${path}: no setDefaultTimeout(TEST_MS) at its top level: its tests would get 5 s under a bare \`bun test\``)
    else if (before) found.push(`${path}:${lineOf(bytes, before)}: registers before setDefaultTimeout(...), which covers only what comes after it`)
  }
  return found
}

/** The violations in every .ts file under test/. */
export function checkTestBounds(root: string): { files: number; violations: string[] } {
  const paths = [...new Glob('test/**/*.ts').scanSync({ cwd: root })].sort()
  const violations = paths.flatMap((path) => checkFile(path, readFileSync(join(root, path), 'utf8')))
  return { files: paths.length, violations }
}

/**
 * The TypeScript examples of the client pages (docs/clients/*.md) typecheck as a user's project would
 * check them (strict), against the pinned packages: an example that runs (each client's test runs its
 * page's examples) but does not compile would fail whoever pastes it into a checked project.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../support/gateway'
import { TEST_MS } from '../support/hooks'
import { docBlocks, docPage } from './harness'

setDefaultTimeout(TEST_MS)

describe('the client docs pages', () => {
  test('every TypeScript example typechecks (strict)', async () => {
    const pages = readdirSync(join(ROOT, 'docs', 'clients')).filter((name) => name.endsWith('.md'))
    // Under node_modules, so that the examples' imports resolve to the project's packages as in a user's project.
    const cache = join(ROOT, 'node_modules', '.cache')
    mkdirSync(cache, { recursive: true })
    const dir = mkdtempSync(join(cache, 'chatgate-doc-examples-'))
    try {
      let count = 0
      for (const page of pages) {
        for (const [i, block] of docBlocks(docPage(page), 'ts').entries()) {
          writeFileSync(join(dir, `${page.replace(/\.md$/, '')}-${block.tag || i}.ts`), block.code)
          count++
        }
      }
      expect(count).toBeGreaterThan(0)
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ESNext',
            module: 'Preserve',
            moduleResolution: 'bundler',
            lib: ['ESNext'],
            types: ['bun'],
            strict: true,
            noEmit: true,
            skipLibCheck: true,
          },
          include: ['*.ts'],
        }),
      )
      const proc = Bun.spawn(['bun', join(ROOT, 'node_modules', '.bin', 'tsc'), '-p', dir], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
      if (code !== 0) throw new Error(`the examples do not typecheck:\n${stdout}${stderr}`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

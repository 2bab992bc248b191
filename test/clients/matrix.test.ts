/**
 * docs/compatibility-matrix.md is what the real-client tests' last run produced (see matrix.ts):
 * rendered from test/clients/results/*.json, never edited by hand. Each client's test file checks
 * the page after its own run; this file checks it whatever ran, and that the results name real
 * test files and pages.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../support/gateway'
import { TEST_MS } from '../support/hooks'
import { failureDetail, MATRIX_STALE, matrixState, readResults, renderMatrix, TARGET_KINDS } from './matrix'

setDefaultTimeout(TEST_MS)

describe('the compatibility matrix', () => {
  test('docs/compatibility-matrix.md is the rendering of the results of the last run', async () => {
    const { expected, actual } = await matrixState()
    if (actual !== expected) throw new Error(MATRIX_STALE)
  })

  test('every results file names its test file and docs page, and only declared rows and known kinds of upstream', () => {
    const results = readResults()
    expect(results.length).toBeGreaterThanOrEqual(5)
    const kinds: string[] = TARGET_KINDS.map((t) => t.kind)
    for (const client of results) {
      expect(existsSync(join(ROOT, client.test))).toBe(true)
      expect(existsSync(join(ROOT, 'docs', client.page))).toBe(true)
      for (const cell of client.cells) {
        expect(client.rows.map((row) => row.id)).toContain(cell.row)
        expect(kinds).toContain(cell.target)
        expect(cell.outcome === 'works' || (cell.outcome === 'fails' && typeof cell.detail === 'string')).toBe(true)
      }
    }
  })

  test('a failure is shown by what the test said, on one line, without ports or ids', async () => {
    const detail = failureDetail(
      new Error('400 unsupported_parameter at http://127.0.0.1:41234 for resp_0a1b2c3d4e5f (request 123456)\n--- context\nthe client sent: ...'),
    )
    expect(detail).toBe('400 unsupported_parameter at http://127.0.0.1:PORT for resp_… (request N)')
    const page = await renderMatrix([
      {
        id: 'x',
        order: 1,
        name: 'A client 1.0',
        page: 'clients/x.md',
        test: 'test/clients/x.test.ts',
        rows: [{ id: 'r', label: 'does a thing' }],
        cells: [
          { row: 'r', target: 'native', outcome: 'works' },
          { row: 'r', target: 'anthropic', outcome: 'fails', detail: 'a | b' },
        ],
      },
    ])
    expect(page).toMatch(/\| does a thing +\| works +\| — +\| \*\*fails\*\*: a \\\| b +\| — +\|/)
  })
})

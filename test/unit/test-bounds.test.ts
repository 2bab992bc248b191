import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { checkFile } from '../../.ci/test-bounds'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const HEAD = "import { afterAll, beforeAll, beforeEach, setDefaultTimeout, test } from 'bun:test'\nconst x = 1\nsetDefaultTimeout(60_000)\n"

describe('the test-bounds rule (bun run deps)', () => {
  test('a file that sets its default and bounds every hook passes', () => {
    const source = `${HEAD}beforeAll(async () => {\n  await start()\n}, 120_000)\nafterAll(() => stop(), 60_000)\ntest('t', () => {})\n`
    expect(checkFile('test/a.test.ts', source)).toEqual([])
  })

  test('a hook without a bound is reported with its line, however it is named or spread', () => {
    const source = [
      "import { beforeAll as before, afterEach } from 'bun:test'",
      "import * as bunTest from 'bun:test'",
      'before(async () => {',
      '  await start()',
      '})',
      'afterEach(() => {})',
      'bunTest.beforeEach(() => {})',
      'bunTest.afterAll(() => {}, 5_000)',
    ].join('\n')
    expect(checkFile('test/support/x.ts', source)).toEqual([
      'test/support/x.ts:3: beforeAll() without a bound: use setup/teardown/setupEach/teardownEach from test/support/hooks.ts',
      'test/support/x.ts:6: afterEach() without a bound: use setup/teardown/setupEach/teardownEach from test/support/hooks.ts',
      'test/support/x.ts:7: beforeEach() without a bound: use setup/teardown/setupEach/teardownEach from test/support/hooks.ts',
    ])
  })

  test('a test file without setDefaultTimeout, or that registers before it, is reported', () => {
    expect(checkFile('test/b.test.ts', "import { test } from 'bun:test'\ntest('t', () => {})\n")).toEqual([
      'test/b.test.ts: no setDefaultTimeout(TEST_MS) at its top level: its tests would get 5 s under a bare `bun test`',
    ])
    const late = "import { describe, setDefaultTimeout } from 'bun:test'\n\ndescribe('d', () => {})\nsetDefaultTimeout(1)\n"
    expect(checkFile('test/c.test.ts', late)).toEqual(['test/c.test.ts:3: registers before setDefaultTimeout(...), which covers only what comes after it'])
  })

  test('a same-named function that is not bun:test, and hooks.ts itself, are left alone', () => {
    expect(checkFile('test/support/y.ts', 'const beforeAll = (f: () => void) => f()\nbeforeAll(() => {})\n')).toEqual([])
    expect(
      checkFile('test/support/hooks.ts', "import { beforeAll } from 'bun:test'\nexport const setup = (fn: () => void, ms = 1) => beforeAll(fn, ms)\n"),
    ).toEqual([])
  })
})

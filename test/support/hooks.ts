/**
 * The bounds every test file runs under, written here rather than on the command line: a bare
 * `bun test` gives each test and hook 5 s, `bun test --timeout N` gives N, and a suite that passes
 * only with the flag fails on a busy machine for whoever forgets it. So each test file starts with
 * `setDefaultTimeout(TEST_MS)` (Bun applies it to the tests and hooks registered after it in that
 * file, and it wins over the flag), and its hooks go through `setup`/`teardown` below, whose bound
 * is explicit. `bun run deps` checks both (.ci/test-bounds.ts).
 *
 * Every number is a safety net, not a duration a test relies on: generous enough that two CPU hogs
 * on a two-core machine never reach it (CI runs the suite that way), so only a condition that never
 * holds does. They nest: a `waitFor` (WAIT_MS) gives up inside its test (TEST_MS), so the failure
 * names what it waited for instead of a bare timeout.
 */
import { afterAll, afterEach, beforeAll, beforeEach } from 'bun:test'
import { WAIT_MS } from './wait'

/** Each test, unless it states its own. */
export const TEST_MS = 60_000
/** A `beforeAll`: starting real Redis, Postgres, several gateway processes or a browser. */
export const SETUP_MS = 120_000
/** An `afterAll`: stopping them, which waits for their processes to exit. */
export const TEARDOWN_MS = 60_000
/** A `beforeEach` or `afterEach`: resetting state between tests (flushing a store, a fresh gateway). */
export const EACH_MS = 30_000

// Kept in order by construction: a wait must give up before the test around it does.
if (!(WAIT_MS < TEST_MS && TEST_MS < SETUP_MS)) throw new Error('test bounds out of order: WAIT_MS < TEST_MS < SETUP_MS')

type Hook = () => void | Promise<unknown>

/** `beforeAll` with an explicit bound. */
export const setup = (fn: Hook, ms = SETUP_MS): void => beforeAll(fn, ms)
/** `afterAll` with an explicit bound. */
export const teardown = (fn: Hook, ms = TEARDOWN_MS): void => afterAll(fn, ms)
/** `beforeEach` with an explicit bound. */
export const setupEach = (fn: Hook, ms = EACH_MS): void => beforeEach(fn, ms)
/** `afterEach` with an explicit bound. */
export const teardownEach = (fn: Hook, ms = EACH_MS): void => afterEach(fn, ms)

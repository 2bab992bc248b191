/**
 * How long a `waitFor` polls before it gives up, unless told otherwise: a safety net that a busy
 * machine never reaches, below each test's own bound (TEST_MS in hooks.ts), so a condition that
 * never holds fails with a message naming it instead of a bare test timeout.
 */
export const WAIT_MS = 30_000

/** What `waitFor` resolves to: the check's value, without the falsy ones it keeps polling past. */
export type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>

export interface WaitOptions {
  /** Pause between two polls of the check. */
  intervalMs?: number
  /** A safety net, not a bound the test relies on (default WAIT_MS). */
  timeoutMs?: number
}

/**
 * Polls `check` until it returns a truthy value, and returns that value. This is how tests wait:
 * on the condition they need (a log line, a counter, a file, a status), never on a fixed sleep.
 *
 * `what` names the condition (a string, or a function for details known only at the time, such as
 * the tail of a process's output); the error thrown after `timeoutMs` quotes it. An error thrown
 * by `check` ends the wait at once and is thrown as is. The timeout is looked at between polls: a
 * check that never settles is bounded by the test's own timeout.
 */
export async function waitFor<T>(check: () => T | Promise<T>, what: string | (() => string), options: WaitOptions = {}): Promise<Truthy<T>> {
  const { intervalMs = 5, timeoutMs = WAIT_MS } = options
  const started = performance.now()
  for (;;) {
    const value = await check()
    if (value) return value as Truthy<T>
    if (performance.now() - started >= timeoutMs) {
      throw new Error(`waitFor: gave up after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`)
    }
    await Bun.sleep(intervalMs)
  }
}

/** Two event-loop turns: what a call scheduled for the next turn (`setImmediate`) has run. */
export async function twoTurns(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve))
  await new Promise((resolve) => setImmediate(resolve))
}

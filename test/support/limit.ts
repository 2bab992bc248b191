/**
 * A bound on how many of the given functions run at once: `limit(4)` returns `run`, and `run(fn)`
 * starts `fn` when fewer than 4 are running, else when one of them is done, in the order they came.
 * For tests that run side by side (test.concurrent) but each start a heavy process: the machine
 * runs a few of those at a time, however many tests there are.
 */
export function limit(most: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let running = 0
  const waiting: (() => void)[] = []
  return async (fn) => {
    if (running < most) running++
    // A finished run hands its place to the first one waiting: `running` stays as it is.
    else await new Promise<void>((resolve) => waiting.push(resolve))
    try {
      return await fn()
    } finally {
      const next = waiting.shift()
      if (next) next()
      else running--
    }
  }
}

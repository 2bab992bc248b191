/**
 * Runs `task` every `intervalMs` in the background, one run at a time: a tick that comes while the
 * last run is still going is skipped. Errors go to `onError`; the timer never keeps the process
 * alive. Returns a stop function.
 */
export function repeat(task: () => Promise<void>, intervalMs: number, onError: (error: unknown) => void): () => void {
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    task()
      .catch(onError)
      .finally(() => (running = false))
  }, intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}

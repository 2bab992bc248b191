import { atMostEvery, type Logger } from './log'

/**
 * A promise rejected with no handler (a background task's, or a database client's own while it
 * reconnects) is logged, at most one line a second, instead of ending the process: the runtime would
 * otherwise exit, cutting every request and stream in flight on the instance. Requests themselves
 * never depend on this: each one's failures are handled on its own path. Returns what removes it.
 */
export function keepServingOnStrayRejections(log: Logger): () => void {
  const mayLog = atMostEvery(1000)
  const logged = (reason: unknown) => {
    if (mayLog())
      log.error({ reason: reason instanceof Error ? reason.message : String(reason) }, 'a promise was rejected with no handler; the gateway goes on serving')
  }
  process.on('unhandledRejection', logged)
  return () => void process.off('unhandledRejection', logged)
}

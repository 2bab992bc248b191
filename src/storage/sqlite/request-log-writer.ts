import type { JournalRange, RequestWriter } from '../../request-log/store'
import { fromRoot } from '../../root'

/** What the main thread tells the worker (request-log-worker.ts). */
export type WriterMessage = { open: string } | { flush: number; range: JournalRange }
/** What the worker answers a flush: the last batch written, or why the write failed. */
export type WriterReply = { flushed: number } | { flushed: number; error: string }

/**
 * A request journal's writer on a thread of its own, with its own connection to the database file.
 * At each flush (every second, and before a read) it reads the journal's new lines from the file
 * itself and writes them in one transaction: the event loop copies no row to it and never runs the
 * transaction. It holds nothing the journal file does not, so a process killed meanwhile loses
 * nothing (the next process folds the file).
 */
export function workerWriter(path: string): RequestWriter {
  const worker = new Worker(fromRoot('src/storage/sqlite/request-log-worker.ts'))
  const post = (message: WriterMessage) => worker.postMessage(message)
  const waiting = new Map<number, { resolve(): void; reject(error: Error): void }>()
  let failure: Error | null = null
  let flushes = 0
  // The worker keeps the process alive only while a flush waits on it.
  worker.unref()
  const settleAll = () => {
    for (const [, waiter] of waiting) waiter.reject(failure!)
    waiting.clear()
  }
  worker.onmessage = ({ data }: MessageEvent<WriterReply>) => {
    const waiter = waiting.get(data.flushed)
    waiting.delete(data.flushed)
    if (waiting.size === 0) worker.unref()
    if ('error' in data) waiter?.reject(new Error(data.error))
    else waiter?.resolve()
  }
  worker.onerror = (event) => {
    failure = new Error(`the request log's writer thread failed: ${event.message}`)
    settleAll()
  }
  post({ open: path })
  return {
    add() {},
    flush(range) {
      if (range === null) return Promise.resolve()
      if (failure) return Promise.reject(failure)
      const id = ++flushes
      worker.ref()
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject })
        post({ flush: id, range })
      })
    },
    close() {
      failure ??= new Error("the request log's writer was closed")
      settleAll()
      void worker.terminate()
    },
  }
}

/**
 * The request log's writer thread (see request-log-writer.ts): batches of rows as the journal holds
 * them come in; every 200 ms and at each flush they are written in one transaction on a connection
 * of this thread's own. A write that fails (the database locked past its busy timeout) keeps the
 * rows for the next one.
 */
import { Database } from 'bun:sqlite'
import type { LogRow } from '../../request-log/entry'
import { rowWriter } from './request-log'
import type { WriterMessage, WriterReply } from './request-log-writer'

declare const self: Worker

const WRITE_EVERY_MS = 200

let putAll: ((rows: LogRow[]) => void) | null = null
let pending: LogRow[] = []
/** The last batch received, and the last one written. */
let received = 0
let written = 0

function write(): void {
  if (pending.length > 0) {
    putAll!(pending)
    pending = []
  }
  written = received
}

function open(path: string): void {
  const sqlite = new Database(path, { strict: true })
  sqlite.run('PRAGMA busy_timeout = 5000')
  sqlite.run('PRAGMA synchronous = NORMAL')
  putAll = rowWriter(sqlite)
  setInterval(() => {
    try {
      write()
    } catch {
      // Kept for the next write; a flush reports the failure.
    }
  }, WRITE_EVERY_MS)
}

self.onmessage = ({ data }: MessageEvent<WriterMessage>) => {
  if ('open' in data) return open(data.open)
  if ('rows' in data) {
    for (const row of data.rows) pending.push(row)
    received = data.seq
    return
  }
  let reply: WriterReply
  try {
    write()
    reply = { flushed: data.flush, seq: written }
  } catch (error) {
    reply = { flushed: data.flush, error: (error as Error).message }
  }
  self.postMessage(reply)
}

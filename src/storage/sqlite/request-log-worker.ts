/**
 * The request log's writer thread (see request-log-writer.ts): at each flush it reads the journal's
 * new lines from the file and writes their rows in one transaction, on a connection of this
 * thread's own. A write that fails (the database locked past its busy timeout) is answered as such;
 * the main thread asks again for the same lines at its next flush (rows are written once by uid).
 */
import { Database } from 'bun:sqlite'
import { closeSync, openSync, readSync } from 'node:fs'
import type { LogRow } from '../../request-log/entry'
import { rowsInText } from '../../request-log/journal'
import type { JournalRange } from '../../request-log/store'
import { rowWriter } from './request-log'
import type { WriterMessage, WriterReply } from './request-log-writer'

declare const self: Worker

let putAll: ((rows: LogRow[]) => void) | null = null

function open(path: string): void {
  const sqlite = new Database(path, { strict: true })
  sqlite.run('PRAGMA busy_timeout = 5000')
  sqlite.run('PRAGMA synchronous = NORMAL')
  putAll = rowWriter(sqlite)
}

/** The text of a journal between two offsets. */
function readRange({ path, from, to }: JournalRange): string {
  const bytes = Buffer.alloc(to - from)
  const fd = openSync(path, 'r')
  try {
    let read = 0
    while (read < bytes.length) {
      const n = readSync(fd, bytes, read, bytes.length - read, from + read)
      if (n === 0) break
      read += n
    }
    return bytes.subarray(0, read).toString()
  } finally {
    closeSync(fd)
  }
}

self.onmessage = ({ data }: MessageEvent<WriterMessage>) => {
  if ('open' in data) return open(data.open)
  let reply: WriterReply
  try {
    if (data.range.to > data.range.from) putAll!(rowsInText(readRange(data.range)))
    reply = { flushed: data.flush }
  } catch (error) {
    reply = { flushed: data.flush, error: (error as Error).message }
  }
  self.postMessage(reply)
}

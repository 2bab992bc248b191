import type { Logger } from '../../log'
import { rowsOf } from '../../request-log/journal'
import type { SharedRequestLog } from '../../request-log/log'
import type { RequestLogStore } from '../../request-log/store'
import type { RedisConnection } from './connection'

const STREAM = 'cg:requests'
/** Held by the instance folding the stream; it lapses should that instance die mid-fold. */
const FOLDING = 'cg:requests:folding'
const FOLD_LEASE_MS = 30_000
/** Stream entries (each a turn's batch of records) read and written per transaction. */
const BATCH = 200

type StreamEntry = [id: string, fields: string[]]

/**
 * The request log's stream in Redis, shared by the instances of a cluster: each instance appends a
 * turn's records as one entry (awaited before the answers leave, as usage settles are), and the
 * instances fold the stream into the database every second, one at a time. Records carry their own
 * unique id and the store writes a row once per id, so entries folded twice (a fold killed before
 * its trim) are stored once; folded entries are then trimmed. While the database is away, entries
 * wait in Redis.
 */
export class RedisRequestLog implements SharedRequestLog {
  /** The last entry this instance folded: where its next read starts. */
  private point = '0-0'

  constructor(
    private readonly redis: RedisConnection,
    private readonly log: Logger,
  ) {}

  async append(payload: string): Promise<void> {
    await this.redis.send('XADD', [STREAM, '*', 'r', payload])
  }

  /**
   * Writes the stream into the store, when no other instance is doing it (each would write the same
   * rows: one at a time suffices, and a reader elsewhere sees them within a second).
   */
  async fold(store: RequestLogStore): Promise<void> {
    const token = crypto.randomUUID()
    if ((await this.redis.send('SET', [FOLDING, token, 'NX', 'PX', String(FOLD_LEASE_MS)])) !== 'OK') return
    try {
      await this.foldAll(store)
    } finally {
      // Released only if still ours (a fold that outlived its lease may have lost it).
      if ((await this.redis.send('GET', [FOLDING])) === token) await this.redis.send('DEL', [FOLDING])
    }
  }

  private async foldAll(store: RequestLogStore): Promise<void> {
    for (;;) {
      const entries = (await this.redis.send('XRANGE', [STREAM, `(${this.point}`, '+', 'COUNT', String(BATCH)])) as StreamEntry[]
      if (entries.length === 0) return
      await store.put(entries.flatMap(([id, fields]) => this.rowsIn(id, fields)))
      this.point = entries.at(-1)![0]
      // Entries up to the point are in the database, whoever folded them.
      await this.redis.send('XTRIM', [STREAM, 'MINID', this.point])
      if (entries.length < BATCH) return
    }
  }

  private rowsIn(id: string, fields: string[]) {
    try {
      return rowsOf(JSON.parse(fields[fields.indexOf('r') + 1] ?? ''))
    } catch {
      this.log.error({ entry: id }, 'a request log stream entry that cannot be read was skipped')
      return []
    }
  }
}

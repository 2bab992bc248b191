import type { Logger } from '../../log'
import { rowsOf } from '../../request-log/journal'
import type { SharedRequestLog } from '../../request-log/log'
import type { RequestLogStore } from '../../request-log/store'
import type { RedisConnection } from './connection'

const STREAM = 'cg:requests'
/** Stream entries (each a turn's batch of records) read and written per transaction. */
const BATCH = 200

type StreamEntry = [id: string, fields: string[]]

/**
 * The request log's stream in Redis, shared by the instances of a cluster: each instance appends a
 * turn's records as one entry (awaited before the answers leave, as usage settles are), and every
 * instance folds the stream into the database every second. Records carry their own unique id and
 * the store writes a row once per id, so two instances folding the same entries write each once;
 * folded entries are then trimmed. While the database is away, entries wait in Redis.
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

  async fold(store: RequestLogStore): Promise<void> {
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

import type { RequestLogSettings } from '../config/types'
import type { GatewayError } from '../errors'
import { TurnBatch } from '../journal/turn-batch'
import { atMostEvery, type Logger } from '../log'
import type { RequestRecord } from '../observe/request-record'
import { DAY_MS } from '../time'
import { repeat } from '../usage/repeat'
import { cutBody, redactBody, redactPaths } from './bodies'
import { type KeptBodies, loggedRequest, type LoggedRequest, type LogRow, logRowOf, requestOf } from './entry'
import { payloadOf, type RequestJournal } from './journal'
import { encodeCursor, PRUNE_BATCH, type RequestLogStore, type RequestQuery } from './store'

/**
 * Redis, for the instances of a cluster: a turn's rows become one entry of a stream that every
 * instance folds into the shared database (src/storage/redis/request-log.ts).
 */
export interface SharedRequestLog {
  /** Appends one batch (`payloadOf(rows)`); resolves once Redis has it. */
  append(payload: string): Promise<void>
  /** Writes what the stream holds into the store, then trims it. */
  fold(store: RequestLogStore): Promise<void>
}

export interface RequestLogOptions {
  settings: () => RequestLogSettings
  store: RequestLogStore
  /** This process's journal: every record when there is no Redis, and those written at once (see `finished`) when there is. */
  journal: RequestJournal
  shared: SharedRequestLog | null
  now: () => number
  /** A record could not be written (a full disk): it is lost, the request is not (see docs/decisions.md). */
  onLost: (error: unknown) => void
}

/** A page of records, newest first. */
export interface RequestPage {
  data: LoggedRequest[]
  next_cursor: string | null
}

/** What tells the operator that records are being lost (a full disk): one line per 10 s at most. */
export function lostRecordWarning(log: Logger): (error: unknown) => void {
  const mayLog = atMostEvery(10_000)
  return (error) => {
    if (mayLog()) log.error({ reason: (error as Error).message }, 'a request log record could not be written and is lost (the request itself was served)')
  }
}

/** How often the log prunes records past their retention. */
const PRUNE_INTERVAL_MS = 600_000

/**
 * The request log: one record per request to an inbound API, made durable the way usage is.
 *
 * A request that reaches serving (serve.ts) records its end with `settle`, in the same event-loop
 * turn as its usage: the turn's records are written together at its end (one `write()` to this
 * process's journal, or one stream entry in Redis), and the answer waits for that write, as it
 * waits for its usage. A request refused before serving (its body, its validation) or served
 * elsewhere (stored responses, token counts) is recorded by `finished`, the observer's listener,
 * at once and synchronously in the journal, before its answer leaves. So a client that got an
 * answer finds its record even when the process was killed right after. Refusals with 401 are
 * counted in metrics only: a flood of bad keys cannot fill the disk.
 *
 * Journaled records are folded into the store every second and before every read.
 */
export class RequestLog {
  private readonly batch = new TurnBatch<LogRow>(() => void this.flush())
  /** Makes this process's uids unique among every process's. */
  private readonly tag = `${Date.now().toString(36)}${crypto.randomUUID().slice(0, 6)}-`
  /** Counts from 36^7: eight base-36 digits for the next 2.7e12 records, so one process's uids sort in the order they were made, unpadded. */
  private count = 36 ** 7
  private paths: { source: readonly string[]; split: string[][] } = { source: [], split: [] }
  private folding: Promise<void> | null = null
  private stopTimers: (() => void)[] = []

  constructor(private readonly options: RequestLogOptions) {}

  /** Whether records of this tier's requests may keep bodies: streams assemble their answer only then. */
  keepsBodies(tier: string | undefined): boolean {
    const settings = this.options.settings()
    return settings.enabled && this.modeOf(settings, tier) !== 'off'
  }

  /** Records the end of a served request in this turn's batch; resolves once it is durable (never rejects: see onLost). */
  settle(record: RequestRecord, status: number, error?: GatewayError): Promise<void> {
    const row = this.rowFor(record, status, error)
    return row === null ? Promise.resolve() : this.batch.add(row)
  }

  /** The observer's finish listener: records a request not recorded by `settle`, durably, before its answer leaves. */
  readonly finished = (record: RequestRecord, status: number, error: GatewayError | undefined): void => {
    const row = this.rowFor(record, status, error)
    if (row !== null) this.journalNow([row])
  }

  private modeOf(settings: RequestLogSettings, tier: string | undefined) {
    return (tier === undefined ? undefined : settings.tierBodies[tier]) ?? settings.bodies
  }

  private rowFor(record: RequestRecord, status: number, error: GatewayError | undefined): LogRow | null {
    const settings = this.options.settings()
    if (!settings.enabled || status === 401 || record.api === undefined) return null
    const earlier = record.logged
    if (earlier?.status === status) return null
    const uid = earlier?.uid ?? this.tag + (++this.count).toString(36)
    // A second end with another status (its usage could not be recorded after all) replaces this record.
    record.logged = { uid, status }
    const at = this.options.now()
    return logRowOf(uid, at, loggedRequest(record, status, error, this.bodiesOf(settings, record, status >= 400 || error !== undefined)))
  }

  /** `failed`: refused, or a stream that broke or whose caller left. */
  private bodiesOf(settings: RequestLogSettings, record: RequestRecord, failed: boolean): KeptBodies | null {
    const mode = this.modeOf(settings, record.tier)
    if (mode === 'off' || (mode === 'errors' && !failed)) return null
    if (this.paths.source !== settings.redact) this.paths = { source: settings.redact, split: redactPaths(settings.redact) }
    const keep = (text: string | undefined, paths: string[][]) => (text === undefined ? null : cutBody(redactBody(text, paths), settings.maxBodyBytes))
    return { request: keep(record.requestBody, this.paths.split), response: keep(record.responseBody, []) }
  }

  private journalNow(rows: LogRow[]): void {
    try {
      this.options.journal.append(rows)
    } catch (error) {
      this.options.onLost(error)
    }
  }

  /** Writes the turn's batch: to Redis when there is one (the journal if Redis fails), else to the journal. */
  private async flush(): Promise<void> {
    const { items, settle } = this.batch.take()
    if (items.length > 0) {
      const shared = this.options.shared
      if (shared === null) this.journalNow(items)
      else await shared.append(payloadOf(items)).catch(() => this.journalNow(items))
    }
    settle?.resolve()
  }

  /** Writes every record journaled so far (the journals of processes that are gone, and in a cluster the shared stream too) into the store. One fold at a time. */
  async fold(): Promise<void> {
    while (this.folding) await this.folding
    this.folding = this.foldOnce().finally(() => (this.folding = null))
    return this.folding
  }

  private async foldOnce(): Promise<void> {
    const { journal, shared, store } = this.options
    await journal.fold()
    // Records of processes killed beside the same files: at the first read after a restart already.
    await journal.foldOthers(store, 'skip')
    await shared?.fold(store)
  }

  /** A page of records, newest first: everything recorded so far included. */
  async list(query: RequestQuery): Promise<RequestPage> {
    await this.fold()
    const rows = await this.options.store.list({ ...query, limit: query.limit + 1 })
    const page = rows.slice(0, query.limit)
    return { data: page.map(requestOf), next_cursor: rows.length > query.limit ? encodeCursor(page.at(-1)!) : null }
  }

  /** The newest record with this request id, or null. */
  async get(id: string): Promise<LoggedRequest | null> {
    await this.fold()
    const row = await this.options.store.get(id)
    return row === null ? null : requestOf(row)
  }

  /** Removes the records past `retention_days`, a batch at a time; returns how many. */
  async prune(): Promise<number> {
    const before = this.options.now() - this.options.settings().retentionDays * DAY_MS
    let removed = 0
    for (;;) {
      const batch = await this.options.store.prune(before)
      removed += batch
      if (batch < PRUNE_BATCH) return removed
    }
  }

  /** Folds every second, and prunes now and every 10 minutes. */
  start(onError: (error: unknown) => void, foldMs = 1000): void {
    if (this.stopTimers.length > 0) return
    this.stopTimers.push(repeat(() => this.fold(), foldMs, onError))
    const prune = () => this.prune().then(() => {})
    prune().catch(onError)
    this.stopTimers.push(repeat(prune, PRUNE_INTERVAL_MS, onError))
  }

  /** Folds what is left, then removes the journal (kept for the next start when the fold failed). */
  async stop(): Promise<void> {
    for (const stop of this.stopTimers) stop()
    this.stopTimers = []
    await this.flush()
    await this.fold()
    this.options.journal.remove()
  }
}

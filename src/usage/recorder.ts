import { and, asc, eq, gte, lte, sql } from 'drizzle-orm'
import { apiKeys, usageDaily, usageJournalState } from '../../db/schema'
import type { Db } from '../db'
import { GatewayError } from '../errors'
import type { QuotaBaseline } from '../limits/limiter'
import { type JournalBatch, readJournal, type UsageJournal } from './journal'
import { MinuteRollups, type SeriesPoint, type SeriesQuery, usageSeries } from './rollups'

export interface UsageEntry {
  keyId: string
  alias: string
  upstream: string
  error: boolean
  promptTokens: number
  completionTokens: number
  latencyMs: number
  at: number
}

/** "YYYY-MM-DD" of a time, in UTC. */
export const utcDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

/** utcDate for times that mostly fall on the same day: the string is worked out once per day, not per call. */
export class UtcDays {
  private day = ''
  private start = 0
  private end = 0

  of(ms: number): string {
    if (ms < this.start || ms >= this.end) {
      this.day = utcDate(ms)
      this.start = Date.parse(`${this.day}T00:00:00Z`)
      this.end = this.start + 86_400_000
    }
    return this.day
  }
}

// A type alias, not an interface: it must fit the statement's named-parameter record.
type DailyRow = {
  keyId: string
  date: string
  alias: string
  upstream: string
  requests: number
  errors: number
  prompt: number
  completion: number
  total: number
  latency: number
}

/** Usage entries added up per counter row (daily and per minute), written to SQLite in one go. */
class PendingUsage {
  private readonly upsert
  private daily = new Map<string, DailyRow>()
  private readonly rollups: MinuteRollups
  private readonly days = new UtcDays()

  constructor(db: Db) {
    this.rollups = new MinuteRollups(db)
    const p = (name: string) => sql.placeholder(name)
    this.upsert = db
      .insert(usageDaily)
      .values({
        keyId: p('keyId'),
        date: p('date'),
        alias: p('alias'),
        upstream: p('upstream'),
        requests: p('requests'),
        errors: p('errors'),
        promptTokens: p('prompt'),
        completionTokens: p('completion'),
        totalTokens: p('total'),
        latencyMsSum: p('latency'),
      })
      .onConflictDoUpdate({
        target: [usageDaily.keyId, usageDaily.date, usageDaily.alias, usageDaily.upstream],
        set: {
          requests: sql`${usageDaily.requests} + excluded.requests`,
          errors: sql`${usageDaily.errors} + excluded.errors`,
          promptTokens: sql`${usageDaily.promptTokens} + excluded.prompt_tokens`,
          completionTokens: sql`${usageDaily.completionTokens} + excluded.completion_tokens`,
          totalTokens: sql`${usageDaily.totalTokens} + excluded.total_tokens`,
          latencyMsSum: sql`${usageDaily.latencyMsSum} + excluded.latency_ms_sum`,
        },
      })
      .prepare()
  }

  get empty(): boolean {
    return this.daily.size === 0
  }

  add(entry: UsageEntry): void {
    const date = this.days.of(entry.at)
    const id = `${entry.keyId}\u0000${date}\u0000${entry.alias}\u0000${entry.upstream}`
    let row = this.daily.get(id)
    if (!row) {
      row = { keyId: entry.keyId, date, alias: entry.alias, upstream: entry.upstream, requests: 0, errors: 0, prompt: 0, completion: 0, total: 0, latency: 0 }
      this.daily.set(id, row)
    }
    row.requests++
    if (entry.error) row.errors++
    row.prompt += entry.promptTokens
    row.completion += entry.completionTokens
    row.total += entry.promptTokens + entry.completionTokens
    row.latency += Math.round(entry.latencyMs)
    this.rollups.add(entry)
  }

  /** Writes everything added so far; call inside a transaction. */
  write(): void {
    for (const row of this.daily.values()) this.upsert.run(row)
    this.rollups.write()
    this.clear()
  }

  clear(): void {
    this.daily = new Map()
    this.rollups.clear()
  }
}

/** Folds the journal batches past `foldedSeq` into `pending`; returns the last sequence number seen. */
function addUnfolded(pending: PendingUsage, batches: JournalBatch[], foldedSeq: number): number {
  let last = foldedSeq
  for (const batch of batches) {
    if (batch.seq <= foldedSeq) continue
    for (const entry of batch.entries) pending.add(entry)
    last = Math.max(last, batch.seq)
  }
  return last
}

/** The journal's fold point, read and written inside the fold's transaction. */
class FoldState {
  private readonly read
  private readonly write

  constructor(db: Db) {
    this.read = db.select({ seq: usageJournalState.foldedSeq }).from(usageJournalState).where(eq(usageJournalState.id, 1)).prepare()
    this.write = db
      .insert(usageJournalState)
      .values({ id: 1, foldedSeq: sql.placeholder('seq') })
      .onConflictDoUpdate({ target: usageJournalState.id, set: { foldedSeq: sql`excluded.folded_seq` } })
      .prepare()
  }

  get seq(): number {
    return this.read.get()?.seq ?? 0
  }

  set seq(seq: number) {
    this.write.run({ seq })
  }
}

/**
 * Usage counters (daily, and per-minute rollups for the dashboard), durable before the response
 * ends and cheap per request. Entries recorded in the same event-loop turn are appended to the
 * journal (see journal.ts) in one `write()`; `record` resolves once that write returned, and callers
 * await it before the response is finished, so a response the client received is counted even if
 * the process dies right after. Every second the counters added up meanwhile are folded into SQLite
 * in one transaction and the journal is emptied. A SQLite commit per turn cost about 25 µs (a WAL
 * frame per page touched); the journal write costs about 2 µs.
 *
 * Without a journal (an in-memory database) each turn's entries are committed to SQLite directly.
 */
export class UsageRecorder {
  private batch: UsageEntry[] = []
  private written: Promise<void> | null = null
  private settle: { resolve: () => void; reject: (error: unknown) => void } | null = null
  private readonly pending: PendingUsage
  private readonly state: FoldState
  /** The last batch appended to the journal. */
  private seq: number
  /** The fold point this process last wrote; another value in the database means the CLI folded. */
  private foldedSeq: number
  private timer: Timer | null = null

  constructor(
    private readonly db: Db,
    private readonly journal: UsageJournal | null,
  ) {
    this.pending = new PendingUsage(db)
    this.state = new FoldState(db)
    this.foldedSeq = this.seq = this.state.seq
    // What a killed process journaled but never folded is counted now, before any quota is read.
    // The file is emptied even when nothing in it was new: a torn last line left by an OS crash
    // would otherwise hide every batch appended after it.
    if (journal) {
      this.seq = addUnfolded(this.pending, readJournal(journal.path), this.foldedSeq)
      this.fold()
      journal.truncate()
    }
  }

  /** Adds one request to the counters; resolves once it is durable. */
  record(entry: UsageEntry): Promise<void> {
    this.pending.add(entry)
    this.batch.push(entry)
    if (!this.written) {
      this.written = new Promise((resolve, reject) => (this.settle = { resolve, reject }))
      setImmediate(() => this.writeBatch())
    }
    return this.written
  }

  private writeBatch(): void {
    const batch = this.batch
    const settle = this.settle
    this.batch = []
    this.written = null
    this.settle = null
    if (batch.length === 0) return settle?.resolve()
    try {
      if (this.journal) this.journal.append(++this.seq, batch)
      else this.fold()
      settle?.resolve()
    } catch (error) {
      settle?.reject(error)
    }
  }

  /**
   * Folds everything recorded so far into SQLite and empties the journal. Called every second, at
   * shutdown, and before the gateway reads its own counters, so reads are exact.
   */
  fold(): void {
    if (this.batch.length > 0) this.writeBatch()
    if (this.pending.empty) return
    this.db.$client
      .transaction(() => {
        const stored = this.state.seq
        if (stored !== this.foldedSeq && this.journal) {
          // The CLI folded part of the journal meanwhile: the file, not memory, says what is left.
          this.pending.clear()
          addUnfolded(this.pending, readJournal(this.journal.path), stored)
        }
        this.pending.write()
        this.state.seq = this.seq
      })
      .immediate()
    this.foldedSeq = this.seq
    this.journal?.truncate()
  }

  /** Counter rows and totals, everything recorded so far included. */
  report(query: UsageQuery): { totals: UsageCounters; data: UsageRow[] } {
    this.fold()
    return queryUsage(this.db, query)
  }

  /** A dashboard time series, everything recorded so far included. */
  series(query: SeriesQuery): SeriesPoint[] {
    this.fold()
    return usageSeries(this.db, query)
  }

  /**
   * Folds every second until stopped. A fold that fails (the database locked past its busy timeout,
   * the disk full) changes nothing and loses nothing: the entries stay in memory and in the journal
   * for the next one.
   */
  start(onFoldError: (error: unknown) => void, intervalMs = 1000): void {
    this.timer ??= setInterval(() => {
      try {
        this.fold()
      } catch (error) {
        onFoldError(error)
      }
    }, intervalMs)
    this.timer.unref()
  }

  /** Folds what is left and closes the journal. */
  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.fold()
    this.journal?.close()
  }
}

/**
 * Folds whatever a server journaled but has not folded yet into SQLite, without emptying the file
 * (the server owns it). For the CLI: its reports are exact whether the server runs or was killed.
 */
export function foldJournal(db: Db, journalPath: string | null): void {
  if (journalPath === null) return
  const pending = new PendingUsage(db)
  const state = new FoldState(db)
  db.$client
    .transaction(() => {
      const stored = state.seq
      const last = addUnfolded(pending, readJournal(journalPath), stored)
      if (last === stored) return
      pending.write()
      state.seq = last
    })
    .immediate()
}

export interface UsageCounters {
  requests: number
  errors: number
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
}

export interface UsageRow extends UsageCounters {
  key_id: string
  key_prefix: string
  date: string
  alias: string
  upstream: string
  latency_ms_sum: number
}

export interface UsageQuery {
  keyId?: string
  alias?: string
  upstream?: string
  from: string
  to: string
}

/** Counter rows for a date range (inclusive), optionally for one key, with their totals. */
export function queryUsage(db: Db, query: UsageQuery): { totals: UsageCounters; data: UsageRow[] } {
  const conditions = [gte(usageDaily.date, query.from), lte(usageDaily.date, query.to)]
  if (query.keyId !== undefined) conditions.push(eq(usageDaily.keyId, query.keyId))
  if (query.alias !== undefined) conditions.push(eq(usageDaily.alias, query.alias))
  if (query.upstream !== undefined) conditions.push(eq(usageDaily.upstream, query.upstream))
  const data = db
    .select({
      key_id: usageDaily.keyId,
      key_prefix: sql<string>`coalesce(${apiKeys.prefix}, '')`,
      date: usageDaily.date,
      alias: usageDaily.alias,
      upstream: usageDaily.upstream,
      requests: usageDaily.requests,
      errors: usageDaily.errors,
      prompt_tokens: usageDaily.promptTokens,
      completion_tokens: usageDaily.completionTokens,
      total_tokens: usageDaily.totalTokens,
      latency_ms_sum: usageDaily.latencyMsSum,
    })
    .from(usageDaily)
    .leftJoin(apiKeys, eq(apiKeys.id, usageDaily.keyId))
    .where(and(...conditions))
    .orderBy(asc(usageDaily.date), asc(usageDaily.keyId), asc(usageDaily.alias), asc(usageDaily.upstream))
    .all()
  const totals: UsageCounters = { requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
  for (const row of data) {
    totals.requests += row.requests
    totals.errors += row.errors
    totals.prompt_tokens += row.prompt_tokens
    totals.completion_tokens += row.completion_tokens
    totals.total_tokens += row.total_tokens
  }
  return { totals, data }
}

/** Quotas start from the persisted counters, so a restart does not hand out a fresh quota. */
export function usageBaseline(db: Db): QuotaBaseline {
  const requestsOn = db
    .select({ n: sql<number>`coalesce(sum(${usageDaily.requests}), 0)` })
    .from(usageDaily)
    .where(and(eq(usageDaily.keyId, sql.placeholder('keyId')), eq(usageDaily.date, sql.placeholder('day'))))
    .prepare()
  const tokensSince = db
    .select({ n: sql<number>`coalesce(sum(${usageDaily.totalTokens}), 0)` })
    .from(usageDaily)
    .where(and(eq(usageDaily.keyId, sql.placeholder('keyId')), gte(usageDaily.date, sql.placeholder('firstDay'))))
    .prepare()
  return {
    requestsOn: (keyId, day) => requestsOn.get({ keyId, day })?.n ?? 0,
    tokensSince: (keyId, firstDay) => tokensSince.get({ keyId, firstDay })?.n ?? 0,
  }
}

const DATE = /^\d{4}-\d{2}-\d{2}$/
const MAX_RANGE_DAYS = 366

/** Validates a `from`/`to` pair of UTC dates (inclusive), each defaulting to today. */
export function usageRange(from: string | undefined, to: string | undefined, now: number): { from: string; to: string } {
  const today = utcDate(now)
  const range = { from: from ?? today, to: to ?? today }
  for (const param of ['from', 'to'] as const) {
    const value = range[param]
    if (!DATE.test(value) || utcDate(Date.parse(`${value}T00:00:00Z`) || 0) !== value) {
      throw new GatewayError(400, 'invalid_request_error', `Invalid request: ${param} must be a date like 2026-01-31, got "${value}"`, undefined, param)
    }
  }
  const days = (Date.parse(range.to) - Date.parse(range.from)) / 86_400_000
  if (days < 0) throw new GatewayError(400, 'invalid_request_error', 'Invalid request: from must not be after to', undefined, 'from')
  if (days >= MAX_RANGE_DAYS) throw new GatewayError(400, 'invalid_request_error', `Invalid request: at most ${MAX_RANGE_DAYS} days at once`, undefined, 'from')
  return range
}

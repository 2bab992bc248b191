import { and, asc, eq, gte, lte, sql } from 'drizzle-orm'
import { apiKeys, usageDaily, usageJournals } from '../../db/schema'
import type { Db } from '../db'
import { invalidRequest } from '../errors'
import type { QuotaBaseline } from '../limits/limiter'
import { claimOrphan, type JournalBatch, type JournalFile, listJournals, readJournal, type UsageJournal } from './journal'
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

/** Each journal's fold point, read and written inside the fold's transaction. */
class FoldPoints {
  private readonly read
  private readonly write
  private readonly forget

  constructor(db: Db) {
    const journal = sql.placeholder('journal')
    this.read = db.select({ seq: usageJournals.foldedSeq }).from(usageJournals).where(eq(usageJournals.journal, journal)).prepare()
    this.write = db
      .insert(usageJournals)
      .values({ journal, foldedSeq: sql.placeholder('seq') })
      .onConflictDoUpdate({ target: usageJournals.journal, set: { foldedSeq: sql`excluded.folded_seq` } })
      .prepare()
    this.forget = db.delete(usageJournals).where(eq(usageJournals.journal, journal)).prepare()
  }

  get(journal: string): number {
    return this.read.get({ journal })?.seq ?? 0
  }

  set(journal: string, seq: number): void {
    this.write.run({ journal, seq })
  }

  delete(journal: string): void {
    this.forget.run({ journal })
  }
}

/**
 * Folds journals other than a process's own into SQLite. A fold adds only batches past the
 * journal's fold point and moves the point in the same transaction, so it is never applied twice,
 * whoever runs it. A journal whose owner is gone (its lock can be taken) is then deleted: first the
 * file, then its fold point, so a crash in between leaves a harmless row, never a file that would
 * be counted again from zero.
 */
export class JournalFolder {
  private readonly pending: PendingUsage
  private readonly points: FoldPoints

  constructor(
    private readonly db: Db,
    private readonly dbPath: string | null,
  ) {
    this.pending = new PendingUsage(db)
    this.points = new FoldPoints(db)
  }

  /**
   * Folds every journal but `own`. Orphans are folded and removed; journals of live processes are
   * folded without being emptied when `live` is 'fold' (the CLI, for exact reports), else skipped.
   */
  foldOthers(own: string | null, live: 'fold' | 'skip'): void {
    for (const file of listJournals(this.dbPath)) {
      if (file.id === own) continue
      const orphan = claimOrphan(file)
      if (orphan === null && live === 'skip') continue
      try {
        this.fold(file)
        if (orphan) {
          orphan.remove()
          this.points.delete(file.id)
        }
      } finally {
        orphan?.release()
      }
    }
  }

  private fold(file: JournalFile): void {
    try {
      this.db.$client
        .transaction(() => {
          const stored = this.points.get(file.id)
          const last = addUnfolded(this.pending, readJournal(file.path), stored)
          if (last === stored) return
          this.pending.write()
          this.points.set(file.id, last)
        })
        .immediate()
    } finally {
      this.pending.clear()
    }
  }
}

/**
 * Usage counters (daily, and per-minute rollups for the dashboard), durable before the response
 * ends and cheap per request. Entries recorded in the same event-loop turn are appended to this
 * process's journal (see journal.ts) in one `write()`; `record` resolves once that write returned,
 * and callers await it before the response is finished, so a response the client received is
 * counted even if the process dies right after. Every second the counters added up meanwhile are
 * folded into SQLite in one transaction and the journal is emptied. A SQLite commit per turn cost
 * about 25 µs (a WAL frame per page touched); the journal write costs about 2 µs.
 *
 * Several processes may share one database file: each has its own journal, and each fold also
 * folds and removes the journals of processes that are gone.
 *
 * Without a journal (an in-memory database) each turn's entries are committed to SQLite directly.
 */
export class UsageRecorder {
  private batch: UsageEntry[] = []
  private written: Promise<void> | null = null
  private settle: { resolve: () => void; reject: (error: unknown) => void } | null = null
  private readonly pending: PendingUsage
  private readonly points: FoldPoints
  private readonly others: JournalFolder
  /** The last batch appended to the journal. */
  private seq = 0
  /** The fold point this process last wrote; another value in the database means the CLI folded. */
  private foldedSeq = 0
  private timer: Timer | null = null

  constructor(
    private readonly db: Db,
    private readonly journal: UsageJournal | null,
    dbPath: string | null = null,
  ) {
    this.pending = new PendingUsage(db)
    this.points = new FoldPoints(db)
    this.others = new JournalFolder(db, dbPath)
    // What killed processes journaled but never folded is counted now, before any quota is read.
    this.others.foldOthers(journal?.id ?? null, 'skip')
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
    const journal = this.journal
    this.db.$client
      .transaction(() => {
        if (journal) {
          const stored = this.points.get(journal.id)
          if (stored !== this.foldedSeq) {
            // The CLI folded part of the journal meanwhile: the file, not memory, says what is left.
            this.pending.clear()
            addUnfolded(this.pending, readJournal(journal.path), stored)
          }
        }
        this.pending.write()
        if (journal) this.points.set(journal.id, this.seq)
      })
      .immediate()
    this.foldedSeq = this.seq
    journal?.truncate()
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
   * Folds every second until stopped, with the journals of processes that are gone. A fold that
   * fails (the database locked past its busy timeout, the disk full) changes nothing and loses
   * nothing: the entries stay in memory and in the journal for the next one.
   */
  start(onFoldError: (error: unknown) => void, intervalMs = 1000): void {
    this.timer ??= setInterval(() => {
      try {
        this.fold()
        this.others.foldOthers(this.journal?.id ?? null, 'skip')
      } catch (error) {
        onFoldError(error)
      }
    }, intervalMs)
    this.timer.unref()
  }

  /** Folds what is left, then removes the journal: the file first, then its fold point. */
  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.fold()
    if (this.journal) {
      this.journal.remove()
      this.points.delete(this.journal.id)
    }
  }
}

/**
 * Folds whatever any process journaled but has not folded yet into SQLite, without emptying the
 * journals of processes still running (they own them), and removes those of processes that are
 * gone. For the CLI: its reports are exact whether servers run or were killed.
 */
export function foldJournals(db: Db, dbPath: string | null): void {
  new JournalFolder(db, dbPath).foldOthers(null, 'fold')
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
      throw invalidRequest(`Invalid request: ${param} must be a date like 2026-01-31, got "${value}"`, { param: param })
    }
  }
  const days = (Date.parse(range.to) - Date.parse(range.from)) / 86_400_000
  if (days < 0) throw invalidRequest('Invalid request: from must not be after to', { param: 'from' })
  if (days >= MAX_RANGE_DAYS) throw invalidRequest(`Invalid request: at most ${MAX_RANGE_DAYS} days at once`, { param: 'from' })
  return range
}

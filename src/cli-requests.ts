/**
 * `bun run cli requests show ID` and `bun run cli requests tail`: the request log from the command
 * line. Like the rest of the CLI it opens the database itself, so it works while servers run: on
 * SQLite it first folds every journal beside the database (the running servers' too, left as they
 * are), so a record is there as soon as its request was answered; with Postgres it reads what the
 * instances folded, at most a second behind.
 */
import { parseArgs } from 'node:util'
import { invalidRequest } from './errors'
import { type LoggedRequest, type LogRow, requestOf } from './request-log/entry'
import { foldOthers } from './request-log/journal'
import { MAX_PAGE, type RequestLogStore, type RequestQuery, requestQuery } from './request-log/store'

/** Opens the request log's store for `use`, with the folder its journals are in (null: none), and closes it after. */
export type WithStores = <T>(use: (store: RequestLogStore, journals: string | null) => Promise<T>) => Promise<T>

/** How far back each poll of `tail` looks again: records folded late (another process's journal, a cluster's stream) still show. */
const TAIL_LAG_MS = 10_000
/** Records shown when `tail` starts, before it follows. */
const TAIL_FIRST = 10

const OPTIONS = {
  key: { type: 'string' },
  alias: { type: 'string' },
  upstream: { type: 'string' },
  status: { type: 'string' },
  'error-type': { type: 'string' },
  'interval-ms': { type: 'string' },
  json: { type: 'boolean', default: false },
} as const

const cliUsage = (message: string) => invalidRequest(message, { code: 'cli_usage' })

/** Every record journaled so far, the running servers' included, into the store (SQLite; a cluster's instances fold their own). */
const foldAll = (store: RequestLogStore, journals: string | null) => foldOthers(store, journals, null, 'fold')

/** One line per record: when, status, API, alias, where it went, how long, tokens, key, id, error. */
export function requestLine(r: LoggedRequest): string {
  const where = r.upstream === null ? '-' : `${r.upstream}/${r.upstream_model}${r.attempts.length > 1 ? ` (${r.attempts.length} attempts)` : ''}`
  const error = r.error_type === null ? '' : `  ${r.error_type}${r.error_code ? `/${r.error_code}` : ''}`
  return `${r.time}  ${r.status}  ${r.api}  ${r.alias ?? '-'}  ${where}  ${r.latency_ms}ms  ${r.prompt_tokens}+${r.completion_tokens} tokens  ${r.key_prefix ?? '-'}  ${r.id}${error}`
}

/** A record in full, for a person: its fields, its attempts, its bodies when kept. */
export function requestDetail(r: LoggedRequest): string {
  const lines = [requestLine(r), '']
  const field = (name: string, value: unknown) => {
    if (value !== null && value !== undefined && value !== '') lines.push(`${name.padEnd(16)}${Array.isArray(value) ? value.join(', ') : String(value)}`)
  }
  field('request', `${r.method} ${r.path}`)
  field('key', r.key_id && `${r.key_id} (${r.key_prefix}…), tier ${r.tier}`)
  field('error', r.error_message)
  field('ttft', r.ttft_ms === null ? null : `${r.ttft_ms}ms`)
  field('cost', `$${r.cost_usd}${r.usage_estimated ? ' (tokens estimated: the caller cut the stream)' : ''}`)
  field('cache', r.cache)
  field('response id', r.response_id)
  field('finish', r.finish_reasons)
  field('dropped', r.dropped)
  field('user agent', r.user_agent)
  for (const [i, a] of r.attempts.entries()) {
    lines.push(
      `attempt ${i + 1}       ${a.upstream}/${a.model} from ${a.start_ms}ms to ${a.end_ms ?? '?'}ms: ${a.outcome ?? 'running'}${a.status ? ` (${a.status})` : ''}`,
    )
  }
  if (r.request_body !== null) lines.push('', 'request body:', r.request_body)
  if (r.response_body !== null) lines.push('', 'response body:', r.response_body)
  return lines.join('\n')
}

async function show(id: string, json: boolean, withStores: WithStores, out: (line: string) => void): Promise<void> {
  const row = await withStores(async (store, journals) => {
    await foldAll(store, journals)
    return store.get(id)
  })
  if (row === null) throw invalidRequest(`No request with id "${id}" in the request log`, { code: 'request_not_found' })
  out(json ? JSON.stringify(requestOf(row)) : requestDetail(requestOf(row)))
}

/** Every row matching `query` from `since` on, newest first, a page at a time. */
async function rowsSince(store: RequestLogStore, query: RequestQuery, since: number): Promise<LogRow[]> {
  const rows: LogRow[] = []
  let page: RequestQuery = { ...query, since, limit: MAX_PAGE }
  for (;;) {
    const batch = await store.list(page)
    rows.push(...batch)
    if (batch.length < MAX_PAGE) return rows
    page = { ...page, after: { at: batch.at(-1)!.at, uid: batch.at(-1)!.uid } }
  }
}

/** The last records, then every new one as it is recorded, oldest first, until the process is stopped. */
async function tail(query: RequestQuery, json: boolean, intervalMs: number, withStores: WithStores, out: (line: string) => void): Promise<void> {
  await withStores(async (store, journals) => {
    /** The records shown, by uid, with their time: forgotten once they are older than a poll looks. */
    const shown = new Map<string, number>()
    const print = (rows: LogRow[]) => {
      for (const row of rows.toReversed()) {
        if (shown.has(row.uid)) continue
        shown.set(row.uid, row.at)
        out(json ? JSON.stringify(requestOf(row)) : requestLine(requestOf(row)))
      }
    }
    await foldAll(store, journals)
    const first = await store.list({ ...query, limit: TAIL_FIRST })
    print(first)
    let newest = first[0]?.at ?? Date.now()
    for (;;) {
      await Bun.sleep(intervalMs)
      await foldAll(store, journals)
      const since = newest - TAIL_LAG_MS
      const rows = await rowsSince(store, query, since)
      print(rows)
      newest = Math.max(newest, rows[0]?.at ?? newest)
      for (const [uid, at] of shown) if (at < since) shown.delete(uid)
    }
  })
}

/** `requests show|tail` with their own flags (they filter the log, unlike the other commands' flags). */
export async function requestsCommand(argv: string[], withStores: WithStores, out: (line: string) => void): Promise<void> {
  let parsed
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: OPTIONS })
  } catch (error) {
    throw cliUsage((error as Error).message)
  }
  const { values, positionals } = parsed
  const [command, id, ...rest] = positionals
  if (command === 'show' && id !== undefined && rest.length === 0) return show(id, values.json, withStores, out)
  if (command !== 'tail' || id !== undefined) throw cliUsage('expected "requests show ID" or "requests tail"; run "bun run cli --help"')
  const interval = Number(values['interval-ms'] ?? 1000)
  if (!Number.isInteger(interval) || interval < 10 || interval > 60_000) throw cliUsage('--interval-ms must be a whole number from 10 to 60000')
  let query: RequestQuery
  try {
    query = requestQuery({ key_id: values.key, alias: values.alias, upstream: values.upstream, status: values.status, error_type: values['error-type'] })
  } catch (error) {
    throw cliUsage((error as Error).message.replace(/^Invalid request: /, `--`))
  }
  return tail(query, values.json, interval, withStores, out)
}

import { parseArgs } from 'node:util'
import { requestsCommand } from './cli-requests'
import { KeyService } from './auth/key-service'
import { keyPageQuery, MAX_KEY_PAGE } from './auth/key-listing'
import { checkName, escapeUnprintable, type KeyPageQuery, keyView, MAX_BUDGET_USD, MAX_EXPIRES_IN_DAYS, MAX_KEY_LIMIT } from './auth/keys'
import { type GatewayEnv, readEnv } from './config/env'
import { loadGatewayConfig } from './config/load'
import { GatewayError, invalidRequest } from './errors'
import { createLogger } from './log'
import { providerKinds } from './providers'
import { formatUsd, nanosOfUsd } from './spend/price'
import { localBase, openStores } from './gateway'
import type { Stores } from './storage/types'
import { DAY_MS, utcDate } from './time'
import { foldJournals } from './usage/recorder'
import { UsageReports } from './usage/reports'

const USAGE = `Usage: bun run cli <command> [options]

Commands:
  keys create --name NAME --tier TIER [--expires-in-days N] [--rpm N] [--tpm N]
              [--max-concurrent N] [--monthly-token-quota N] [--daily-request-quota N]
              [--daily-budget-usd USD] [--monthly-budget-usd USD] [--json]
  keys update ID_OR_PREFIX [--tier TIER] [--daily-budget-usd USD|none] [--monthly-budget-usd USD|none] [--json]
  keys list [--search TEXT] [--limit N] [--cursor CURSOR] [--json]
  keys revoke ID_OR_PREFIX [--json]
  usage [--key ID_OR_PREFIX] [--days N] [--json]
  requests show ID [--json]
  requests tail [--key KEY_ID] [--alias ALIAS] [--upstream NAME] [--status CODE|4xx] [--error-type TYPE] [--json]

Reads the same environment as the server (GATEWAY_DB, GATEWAY_CONFIG) and works while it runs.`

/** The command line itself is wrong (exit status 2, as shells expect for usage errors). */
const usageError = (message: string) => invalidRequest(message, { code: 'cli_usage' })

function positiveInt(name: string, value: string | undefined, max = MAX_KEY_LIMIT): number | undefined {
  if (value === undefined) return undefined
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) throw usageError(`--${name} must be a whole number from 1 to ${max}, got "${value}"`)
  return Number(value)
}

/** A budget flag in USD; "none" clears the key's own budget (the tier's applies again). */
function budgetNanos(name: string, value: string | undefined, clearable: boolean): number | null | undefined {
  if (value === undefined) return undefined
  if (clearable && value === 'none') return null
  const amount = Number(value)
  if (!/^\d+(\.\d+)?$/.test(value) || amount <= 0 || amount > MAX_BUDGET_USD) {
    throw usageError(`--${name} must be an amount of USD above 0 and at most ${MAX_BUDGET_USD}${clearable ? ', or none' : ''}, got "${value}"`)
  }
  return nanosOfUsd(amount)
}

/** Every value printed comes through here: a name holding CR, LF or ESC cannot forge rows or colours. */
const cell = (value: unknown) => (value === null || value === undefined ? '-' : escapeUnprintable(String(value)))

function table(rows: Record<string, unknown>[], columns: string[]): string {
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)))
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()
  return [line(columns), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n')
}

/** The CLI opens the stores itself; on a database the server never started, it applies the config first. */
async function openForCli(env: GatewayEnv): Promise<Stores> {
  const stores = await openStores(env, `cli-${process.pid}`)
  try {
    if (await stores.config.isEmpty()) await stores.config.apply(loadGatewayConfig(env.configPath, providerKinds, env.vars), Date.now(), () => {})
  } catch (error) {
    await stores.close()
    throw error
  }
  return stores
}

/** Runs `use` on the opened stores, and closes them whatever happens. */
async function withStores<T>(use: (stores: Stores, env: GatewayEnv) => Promise<T>): Promise<T> {
  const env = readEnv()
  const stores = await openForCli(env)
  try {
    return await use(stores, env)
  } finally {
    await stores.close()
  }
}

/**
 * Makes every request recorded so far readable: the shared usage stream (several instances), or
 * every journal beside the database, the running servers' included. The report is then exact.
 */
async function foldEverything(stores: Stores, env: GatewayEnv): Promise<void> {
  await foldJournals(stores.usage, stores.journalBase ?? localBase(env, 'usage'))
  if (env.redisUrl === null) return
  const { foldSharedUsage } = await import('./storage/redis')
  // Its messages go to stderr: stdout is the report.
  await foldSharedUsage(env.redisUrl, env.redisTimeoutMs, stores.usage, createLogger(env.logLevel, { write: (line) => void process.stderr.write(line) }))
}

/** The CLI authenticates nothing, so it keeps no key cache; servers see its changes by the key-table version. */
const keysOf = (stores: Stores) => new KeyService(stores.keys, null)

const OPTIONS = {
  name: { type: 'string' },
  tier: { type: 'string' },
  'expires-in-days': { type: 'string' },
  rpm: { type: 'string' },
  tpm: { type: 'string' },
  'max-concurrent': { type: 'string' },
  'monthly-token-quota': { type: 'string' },
  'daily-request-quota': { type: 'string' },
  'daily-budget-usd': { type: 'string' },
  'monthly-budget-usd': { type: 'string' },
  key: { type: 'string' },
  days: { type: 'string' },
  search: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>['values']

/** One command: its arguments after the command's own words, the options, and where its lines go. */
type Command = (args: string[], values: Values, out: (line: string) => void) => Promise<void>

const KEY_COLUMNS = [
  'id',
  'prefix',
  'name',
  'tier',
  'created_at',
  'expires_at',
  'revoked_at',
  'rpm',
  'tpm',
  'max_concurrent',
  'monthly_token_quota',
  'daily_request_quota',
  'daily_budget_usd',
  'monthly_budget_usd',
]

async function createKey(_: string[], values: Values, out: (line: string) => void): Promise<void> {
  if (!values.name) throw usageError('keys create needs --name NAME')
  if (!values.tier) throw usageError('keys create needs --tier TIER')
  const input = {
    // Refused before the database is opened: the same rule as the admin API's.
    name: checkName(values.name),
    tier: values.tier,
    expiresInDays: positiveInt('expires-in-days', values['expires-in-days'], MAX_EXPIRES_IN_DAYS),
    requestsPerMinute: positiveInt('rpm', values.rpm),
    tokensPerMinute: positiveInt('tpm', values.tpm),
    maxConcurrent: positiveInt('max-concurrent', values['max-concurrent']),
    monthlyTokenQuota: positiveInt('monthly-token-quota', values['monthly-token-quota']),
    dailyRequestQuota: positiveInt('daily-request-quota', values['daily-request-quota']),
    dailyBudgetNanos: budgetNanos('daily-budget-usd', values['daily-budget-usd'], false),
    monthlyBudgetNanos: budgetNanos('monthly-budget-usd', values['monthly-budget-usd'], false),
  }
  const { record, key } = await withStores((stores) => keysOf(stores).create(input))
  if (values.json) out(JSON.stringify({ id: record.id, key, name: record.name, tier: record.tier, prefix: record.prefix }))
  else out(`Created key ${record.id} (${cell(record.name)}, tier ${cell(record.tier)}). It is shown only this once:\n${key}`)
}

async function updateKey([id]: string[], values: Values, out: (line: string) => void): Promise<void> {
  const patch = {
    tier: values.tier,
    dailyBudgetNanos: budgetNanos('daily-budget-usd', values['daily-budget-usd'], true),
    monthlyBudgetNanos: budgetNanos('monthly-budget-usd', values['monthly-budget-usd'], true),
  }
  const record = keyView(await withStores((stores) => keysOf(stores).update(id!, patch)))
  out(
    values.json
      ? JSON.stringify(record)
      : `Updated key ${record.id} (${record.prefix}…): tier ${cell(record.tier)}, daily budget ${record.daily_budget_usd ?? 'from the tier'}, monthly budget ${record.monthly_budget_usd ?? 'from the tier'}.`,
  )
}

/** Keys a page shows a person unless --limit says otherwise: a screenful, not the 1000 the store reads at once. */
const KEYS_PER_SCREEN = 100

/** The listing's query from the flags, refused as a usage error naming the flag. */
function keyListQuery(values: Values, defaultLimit: number) {
  try {
    return keyPageQuery(
      { limit: values.limit ?? String(defaultLimit), cursor: values.cursor, q: values.search },
      { limit: '--limit', cursor: '--cursor', q: '--search' },
    )
  } catch (error) {
    throw usageError((error as Error).message.replace(/^Invalid request: /, ''))
  }
}

/** A flag value as one shell word, for the "next page" line. */
const shellWord = (text: string) => (/^[\w.@%+=:,/-]+$/.test(text) ? text : `'${escapeUnprintable(text).replaceAll("'", `'\\''`)}'`)

/** Every key as one JSON array, read and written a page at a time: the memory held is one page's. */
async function writeEveryKey(keys: KeyService, first: KeyPageQuery, out: (line: string) => void): Promise<void> {
  let query = first
  for (let opening = '['; ; opening = ',') {
    const page = await keys.page(query)
    if (page.records.length > 0 || opening === '[') out(opening + page.records.map((record) => JSON.stringify(keyView(record))).join(','))
    if (page.nextCursor === null) break
    query = { ...query, after: page.records.at(-1)!.id }
  }
  out(']')
}

/** `--json` alone: every key (see writeEveryKey). Otherwise one page, and the command for the next. */
async function listKeys(_: string[], values: Values, out: (line: string) => void): Promise<void> {
  const query = keyListQuery(values, values.json ? MAX_KEY_PAGE : KEYS_PER_SCREEN)
  if (values.json && values.limit === undefined && values.cursor === undefined) return withStores((stores) => writeEveryKey(keysOf(stores), query, out))
  const page = await withStores((stores) => keysOf(stores).page(query))
  const keys = page.records.map(keyView)
  if (values.json) out(JSON.stringify(keys))
  else out(keys.length === 0 ? 'No keys.' : table(keys, KEY_COLUMNS))
  if (page.nextCursor === null) return
  const flags = [
    `--cursor ${page.nextCursor}`,
    values.limit && `--limit ${values.limit}`,
    values.search && `--search ${shellWord(values.search)}`,
    values.json && '--json',
  ]
  const more = `More keys: bun run cli keys list ${flags.filter(Boolean).join(' ')}`
  // With --json, stdout stays one JSON array.
  if (values.json) process.stderr.write(`${more}\n`)
  else out(more)
}

async function revokeKey([id]: string[], values: Values, out: (line: string) => void): Promise<void> {
  const record = keyView(await withStores((stores) => keysOf(stores).revoke(id!)))
  out(values.json ? JSON.stringify(record) : `Revoked key ${record.id} (${record.prefix}…) at ${record.revoked_at}.`)
}

async function usage(_: string[], values: Values, out: (line: string) => void): Promise<void> {
  const days = positiveInt('days', values.days, 366) ?? 1
  const now = Date.now()
  const report = await withStores(async (stores, env) => {
    const keyId = values.key === undefined ? undefined : (await keysOf(stores).find(values.key)).id
    const reports = new UsageReports(stores.usageReads, () => foldEverything(stores, env))
    return reports.report({ keyId, from: utcDate(now - (days - 1) * DAY_MS), to: utcDate(now) })
  })
  if (values.json) return out(JSON.stringify(report))
  const columns = ['date', 'key_prefix', 'alias', 'upstream', 'requests', 'errors', 'prompt_tokens', 'completion_tokens', 'total_tokens', 'cost_usd']
  const rows = report.data.map((row) => ({ ...row, cost_usd: formatUsd(nanosOfUsd(row.cost_usd)) }))
  out(rows.length === 0 ? 'No usage in that period.' : table(rows, columns))
  const t = report.totals
  out(
    `Total: ${t.requests} requests, ${t.errors} errors, ${t.prompt_tokens} prompt + ${t.completion_tokens} completion = ${t.total_tokens} tokens, $${formatUsd(nanosOfUsd(t.cost_usd))}` +
      (t.cache_saved_usd > 0 ? `; $${formatUsd(nanosOfUsd(t.cache_saved_usd))} saved by the response cache` : ''),
  )
}

/** Every command by its words, with how many arguments follow them. */
const COMMANDS = new Map<string, { args: number; run: Command }>([
  ['keys create', { args: 0, run: createKey }],
  ['keys update', { args: 1, run: updateKey }],
  ['keys list', { args: 0, run: listKeys }],
  ['keys revoke', { args: 1, run: revokeKey }],
  ['usage', { args: 0, run: usage }],
])

async function run(argv: string[], out: (line: string) => void): Promise<void> {
  if (argv[0] === 'requests')
    return requestsCommand(argv.slice(1), (use) => withStores((stores, env) => use(stores.requestLog, stores.journalBase ?? localBase(env, 'usage'))), out)
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true, options: OPTIONS })
  const command = positionals.join(' ')
  if (values.help || command === '') {
    out(USAGE)
    return
  }
  for (const [words, { args, run: runCommand }] of COMMANDS) {
    const length = words.split(' ').length
    if (positionals.slice(0, length).join(' ') === words && positionals.length === length + args) return runCommand(positionals.slice(length), values, out)
  }
  throw usageError(`unknown command "${command}"; run "bun run cli --help"`)
}

run(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`)).catch((error: unknown) => {
  process.stderr.write(`chatgate: ${escapeUnprintable((error as Error).message.split('\n')[0]!)}\n`)
  process.exit(error instanceof GatewayError && error.code === 'cli_usage' ? 2 : 1)
})

/**
 * The compatibility matrix (docs/compatibility-matrix.md): each real client, for each thing it does,
 * through each kind of upstream: works, or what fails. Generated from the real-client tests, never
 * written by hand, so it cannot drift:
 *
 * 1. A client's test file declares its client and rows (`clientMatrix`), and wraps each test that
 *    exercises one row through one kind of upstream in `cell(row, kind, fn)`. Running the test
 *    records the outcome in `test/clients/results/<client>.json`: `works` when the test passed, else
 *    `fails` with the first line of its failure (ports and ids scrubbed, so the record is stable).
 *    A cell that did not run this time keeps its last outcome.
 * 2. `bun test/clients/matrix.ts` renders the page from every results file.
 * 3. The last test of each client file, and test/clients/matrix.test.ts, fail when the page on disk
 *    is not what the results render to: a run whose outcomes changed must be followed by step 2 and
 *    the page committed with its results.
 *
 * The results files are committed beside the page: they hold nothing but the outcomes (no times),
 * so an unchanged run leaves them unchanged.
 */
import { test } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import * as prettier from 'prettier'
import { ROOT } from '../support/gateway'

/** The kinds of upstream a client is tried through: the matrix's columns. */
export const TARGET_KINDS = [
  { kind: 'native', heading: 'OpenAI, native Responses' },
  { kind: 'chat', heading: 'OpenAI-compatible chat' },
  { kind: 'anthropic', heading: 'Anthropic' },
  { kind: 'mock', heading: 'mock' },
  { kind: 'gemini', heading: 'Gemini API' },
  { kind: 'vertex', heading: 'Vertex AI' },
  { kind: 'bedrock', heading: 'Bedrock' },
  { kind: 'azure', heading: 'Azure OpenAI' },
] as const

export type TargetKind = (typeof TARGET_KINDS)[number]['kind']

export interface Cell {
  row: string
  target: TargetKind
  outcome: 'works' | 'fails'
  /** What fails (the first line of the test's failure), for `fails`. */
  detail?: string
}

export interface ClientResults {
  /** The results file's name, without `.json`. */
  id: string
  /** Where the client stands in the matrix (ascending). */
  order: number
  /** The client as the page names it, with its pinned version. */
  name: string
  /** Its docs page, from docs/ (`clients/codex.md`). */
  page: string
  /** The test file that produced the cells, from the repository's root. */
  test: string
  /** The rows, in order: what the client does. */
  rows: { id: string; label: string }[]
  /** Cells that cannot apply (`—` on the page), each with why: a row's, or every row's when `row` is left out. */
  notApplicable?: { row?: string; target: TargetKind; reason: string }[]
  cells: Cell[]
}

export const RESULTS_DIR = join(ROOT, 'test', 'clients', 'results')
export const MATRIX_PAGE = join(ROOT, 'docs', 'compatibility-matrix.md')

const resultsFile = (id: string) => join(RESULTS_DIR, `${id}.json`)

/** Every results file, in the matrix's order. */
export function readResults(): ClientResults[] {
  if (!existsSync(RESULTS_DIR)) return []
  return readdirSync(RESULTS_DIR)
    .filter((name) => name.endsWith('.json'))
    .map((name) => JSON.parse(readFileSync(join(RESULTS_DIR, name), 'utf8')) as ClientResults)
    .sort((a, b) => a.order - b.order || a.id.localeCompare(b.id))
}

/** A failure's message (before its context), on one line, stable from run to run: ports, ids and long numbers scrubbed, trimmed. */
export function failureDetail(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  // What the test said, before the context it appends (`--- context`, `--- stdout`...), on one line.
  const said =
    message
      .split(/\n---/)[0]!
      .replace(/\x1b\[[0-9;]*m/g, '')
      .replace(/\s+/g, ' ')
      .trim() || 'failed'
  const scrubbed = said
    .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:PORT')
    .replace(/\b(resp|msg|fc|rs|call|ctc|req|toolu|chatcmpl)[_-][A-Za-z0-9_-]{6,}/g, '$1_…')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '…')
    .replace(/\b\d{5,}\b/g, 'N')
    .trim()
  return scrubbed.length > 240 ? `${scrubbed.slice(0, 239)}…` : scrubbed
}

/** Text as the project's formatter writes it (`bun run format:check` checks the page and the results too). */
async function formatted(text: string, filepath: string): Promise<string> {
  return prettier.format(text, { ...(await prettier.resolveConfig(filepath)), filepath })
}

/** The records of this process, one after the other: cells that run side by side (`test.concurrent`) must not lose each other's outcome. */
let recording: Promise<void> = Promise.resolve()
function record(client: Omit<ClientResults, 'cells'>, cell: Cell): Promise<void> {
  const done = recording.then(() => recordNow(client, cell))
  // One record that failed (it fails its own test) does not stop the next.
  recording = done.catch(() => undefined)
  return done
}

/** Records one cell in the client's results file (read, merge, write: cells that did not run keep their outcome). */
async function recordNow(client: Omit<ClientResults, 'cells'>, cell: Cell): Promise<void> {
  mkdirSync(RESULTS_DIR, { recursive: true })
  const file = resultsFile(client.id)
  const previous = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ClientResults).cells : []
  const rowIds = client.rows.map((row) => row.id)
  const kinds: string[] = TARGET_KINDS.map((t) => t.kind)
  const cells = [...previous.filter((c) => !(c.row === cell.row && c.target === cell.target)), cell]
    .filter((c) => rowIds.includes(c.row))
    .sort((a, b) => rowIds.indexOf(a.row) - rowIds.indexOf(b.row) || kinds.indexOf(a.target) - kinds.indexOf(b.target))
  // Written whole, then renamed over the old file: a reader never sees half a file.
  const text = await formatted(JSON.stringify({ ...client, cells }, null, 2), file)
  writeFileSync(`${file}.tmp`, text)
  renameSync(`${file}.tmp`, file)
}

/**
 * A client's part of the matrix. `cell(row, target, fn)` is a test body: it runs `fn`, records
 * its outcome, and fails as `fn` failed. A cell known to fail (`knownFailure`: why, as
 * docs/clients/README.md names the exception) records its failure and passes, so the suite stays
 * green while the page shows it; once it works, it fails, to have the exception removed.
 */
export function clientMatrix(client: Omit<ClientResults, 'cells'>) {
  return {
    cell(row: string, target: TargetKind, fn: () => Promise<unknown> | unknown, knownFailure?: string): () => Promise<void> {
      if (!client.rows.some((r) => r.id === row)) throw new Error(`${client.id}: no row "${row}" declared`)
      return async () => {
        try {
          await fn()
        } catch (error) {
          await record(client, { row, target, outcome: 'fails', detail: failureDetail(error) })
          if (knownFailure === undefined) throw error
          return
        }
        await record(client, { row, target, outcome: 'works' })
        if (knownFailure !== undefined)
          throw new Error(`this cell was known to fail (${knownFailure}) and works now: drop its knownFailure and the exception in docs/clients/README.md`)
      }
    },
  }
}

const escapeCell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ')

/** The page, from the results (formatted as the project's formatter writes it). */
export async function renderMatrix(results: ClientResults[]): Promise<string> {
  const lines = [
    '<!-- Generated by `bun test/clients/matrix.ts` from test/clients/results/*.json, which the real-client tests write. Do not edit by hand. -->',
    '',
    '# Compatibility matrix: real clients × upstream kinds',
    '',
    'Each real client, pinned in `package.json`, run by its test in `test/clients/` against a gateway',
    "process in front of fake upstreams written from the providers' published API references: what it",
    'does, through each kind of upstream. **works** means the test passed; otherwise the cell says what',
    'failed, as the test reported it. This page is generated from the last run of those tests',
    '([how](clients/README.md#the-compatibility-matrix)); a test fails when it differs from that run. A',
    'cell that fails is a known exception, named and explained in [clients/README.md](clients/README.md#the-compatibility-matrix).',
    '',
    '| Upstream kind | Alias in the tests | What the gateway does with a request |',
    '| --- | --- | --- |',
    '| OpenAI, native Responses | `openai/gpt-5.6` | an `openai` upstream with `responses = "native"`: the body goes as sent, only `model` replaced ([responses.md](responses.md)) |',
    '| OpenAI-compatible chat | `openai/gpt-4o`; `anthropic/gpt` (the same upstream) for clients of the Messages and Gemini APIs | translated to chat completions |',
    '| Anthropic | `anthropic/smart` | the Messages API: a Messages request as sent, others translated (thinking as sealed reasoning) |',
    '| mock | `local/echo` | translated to the built-in offline mock (it repeats the prompt, and calls a tool when the prompt says `[[tool:NAME {args}]]`) |',
    '| Gemini API | `gemini/flash` | generateContent / streamGenerateContent with an API key: a Gemini API request passed through, others translated ([providers/gemini.md](providers/gemini.md)) |',
    '| Vertex AI | `vertex/gemini`; `vertex/claude` for clients of the Messages API | with a service account; Gemini models: generateContent (a Gemini API request passed through, others translated); Claude: the Messages body through rawPredict / streamRawPredict ([providers/vertex.md](providers/vertex.md)) |',
    '| Bedrock | `bedrock/claude` | translated to Converse / ConverseStream, SigV4-signed ([providers/bedrock.md](providers/bedrock.md)) |',
    '| Azure OpenAI | `azure/gpt` | the v1 API with `responses = "native"`: Responses requests go as sent, chat and Messages requests as chat completions ([providers/azure.md](providers/azure.md)) |',
    '',
  ]
  for (const client of results) {
    lines.push(`## ${client.name}`, '', `Page: [${client.page}](${client.page}); test: \`${client.test}\`.`, '')
    lines.push(`| | ${TARGET_KINDS.map((t) => t.heading).join(' | ')} |`, `| --- | ${TARGET_KINDS.map(() => '---').join(' | ')} |`)
    const reasons: string[] = []
    for (const row of client.rows) {
      const cells = TARGET_KINDS.map((t) => {
        const cell = client.cells.find((c) => c.row === row.id && c.target === t.kind)
        if (cell) return cell.outcome === 'works' ? 'works' : `**fails**: ${escapeCell(cell.detail ?? '')}`
        const why = client.notApplicable?.find((n) => n.target === t.kind && (n.row === undefined || n.row === row.id))?.reason
        if (!why) return '—'
        if (!reasons.includes(why)) reasons.push(why)
        return `— (${reasons.indexOf(why) + 1})`
      })
      lines.push(`| ${escapeCell(row.label)} | ${cells.join(' | ')} |`)
    }
    lines.push('')
    for (const [i, why] of reasons.entries()) lines.push(`(${i + 1}) ${why}`, '')
  }
  lines.push('— : not tried (the row does not apply to that kind of upstream; the number, when there is one, says why).', '')
  return formatted(lines.join('\n'), MATRIX_PAGE)
}

/** What the page should be after the last run, and what it is. */
export async function matrixState(): Promise<{ expected: string; actual: string | null }> {
  return { expected: await renderMatrix(readResults()), actual: existsSync(MATRIX_PAGE) ? readFileSync(MATRIX_PAGE, 'utf8') : null }
}

export const MATRIX_STALE =
  'docs/compatibility-matrix.md is not what the last real-client run produced: run `bun test/clients/matrix.ts` (it renders the page from test/clients/results/*.json) and commit both'

if (import.meta.main) {
  writeFileSync(MATRIX_PAGE, await renderMatrix(readResults()))
  console.log(`wrote ${MATRIX_PAGE}`)
}

/**
 * The last test of a client's file: the page shows this run. Registered after the file's cells, so
 * it runs after them (a file's tests run in order).
 */
export function matrixCheck(): void {
  test('docs/compatibility-matrix.md shows the outcomes of this run', async () => {
    const { expected, actual } = await matrixState()
    if (actual !== expected) throw new Error(MATRIX_STALE)
  })
}

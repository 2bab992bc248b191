/**
 * A server's usage path in a process of its own, killed with SIGKILL once its entries are journaled:
 * what a crash leaves behind, for the journal tests. Prints the journal's path first.
 *
 *   bun test/support/journal-writer.ts <database> <prompt tokens>... [--torn]
 *
 * Each number becomes one request's entry (one completion token, at 2026-11-22T10:00:00Z), journaled
 * in its own batch; --torn then appends half a line, as an OS crash in the middle of a write could.
 */
import { appendFileSync } from 'node:fs'
import { openSqliteStores } from '../../src/storage/sqlite'
import { UsageJournal } from '../../src/usage/journal'
import { UsageRecorder } from '../../src/usage/recorder'

const [path, ...rest] = process.argv.slice(2)
const stores = openSqliteStores(path!)
const journal = UsageJournal.create(path!)
const recorder = await UsageRecorder.open(stores.usage, journal, path!)
process.stdout.write(`${journal.path}\n`)
for (const tokens of rest.filter((arg) => arg !== '--torn')) {
  await recorder.record({
    keyId: 'k1',
    alias: 'a/one',
    upstream: 'up',
    error: false,
    promptTokens: Number(tokens),
    completionTokens: 1,
    costNanos: Number(tokens) * 7,
    latencyMs: 3,
    at: Date.parse('2026-11-22T10:00:00Z'),
  })
}
if (rest.includes('--torn')) appendFileSync(journal.path, '[9,[["k1","a/one"')
process.kill(process.pid, 'SIGKILL')

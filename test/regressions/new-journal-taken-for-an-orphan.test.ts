import { expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AppendLog, listJournalFiles } from '../../src/journal/append-log'
import { tryLockExclusive } from '../../src/journal/file-lock'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

// Three gateways started together on a new database: one failed with "usage journal ... is locked
// by another process". A process opened its new journal under its final name and locked it after:
// in between, another process starting on the same database listed the file, took the unlocked
// file for a dead process's journal and locked it to fold it, and the owner's own lock failed.
// A journal is now made and locked under a name no one lists, then renamed into place: whatever
// another process lists is locked already. What is listed is observed at the moment the lock is taken.

test('a new journal is listed only once its owner holds its lock', () => {
  const dir = mkdtempSync(join(tmpdir(), 'chatgate-journal-race-'))
  try {
    const database = join(dir, 'gateway.sqlite')
    const listedWhenLocked: number[] = []
    const journal = AppendLog.create(database, 'usage', (fd) => {
      listedWhenLocked.push(listJournalFiles(database, 'usage').length)
      return tryLockExclusive(fd)
    })
    expect(listedWhenLocked).toEqual([0])
    expect(listJournalFiles(database, 'usage').map((file) => file.path)).toEqual([journal.path])
    journal.remove()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

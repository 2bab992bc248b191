import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { AppendLog, batchLine } from '../../src/journal/append-log'
import { TEST_MS } from '../support/hooks'
import { mountSmallDisk, smallDiskMissing } from '../support/small-disk'

setDefaultTimeout(TEST_MS)

const missing = smallDiskMissing('the full-disk journal test')

/**
 * A journal line is written as text in one write(). On a disk with less room than the line, the
 * write stores part of it: the journal must throw and cut the file back, or a later read would stop
 * at the torn line and never see the batches after it.
 */
describe.skipIf(missing !== null)('a journal append on a full disk', () => {
  test('a line that fits only in part is cut back: the file holds exactly the lines before it, and appends resume once there is room', () => {
    const disk = mountSmallDisk(256 * 1024)
    try {
      const log = AppendLog.create(join(disk.path, 'gateway.sqlite'), 'test')
      // 95 bytes of the journal's last page used: the rest of that page is all the room left once the disk is filled.
      const first = batchLine(1, JSON.stringify(['é'.repeat(43)]))
      expect(log.append(first)).toBe(Buffer.byteLength(first))
      disk.fill()
      const tooLong = batchLine(2, JSON.stringify(['ü'.repeat(4096)]))
      expect(() => log.append(tooLong)).toThrow()
      expect(readFileSync(log.path, 'utf8')).toBe(first)
      disk.free()
      const third = batchLine(3, JSON.stringify(['after']))
      expect(log.append(third)).toBe(Buffer.byteLength(third))
      expect(readFileSync(log.path, 'utf8')).toBe(first + third)
    } finally {
      disk.dispose()
    }
  })
})

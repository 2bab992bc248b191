import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A real, small file system (a tmpfs of its own, mounted for the test) that the test can fill to
 * the last byte and empty again: for what the gateway does when its disk is full. Mounting needs
 * root (CAP_SYS_ADMIN), which the CI machine has.
 */
export interface SmallDisk {
  path: string
  /** Writes a filler file until the file system is full (ENOSPC). */
  fill(): void
  /** Deletes the filler: space is back. */
  free(): void
  dispose(): void
}

const FILLER = 'filler.bin'

export function mountSmallDisk(sizeBytes: number): SmallDisk {
  const path = mkdtempSync(join(tmpdir(), 'chatgate-disk-'))
  const mounted = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0700`, 'tmpfs', path])
  if (mounted.exitCode !== 0) {
    rmSync(path, { recursive: true, force: true })
    throw new Error(`cannot mount a tmpfs (needs root): ${mounted.stderr.toString().trim()}`)
  }
  const filler = join(path, FILLER)
  return {
    path,
    fill() {
      const fd = openSync(filler, 'a')
      const block = Buffer.alloc(4096, 0x61)
      try {
        for (;;) writeSync(fd, block)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error
      } finally {
        closeSync(fd)
      }
    },
    free() {
      unlinkSync(filler)
    },
    dispose() {
      Bun.spawnSync(['umount', '-l', path])
      rmSync(path, { recursive: true, force: true })
    },
  }
}

/**
 * Why a small disk cannot be mounted here, or null when it can. On CI (root) it must mount: a
 * suite that needs one throws there rather than skip, so a CI machine without it cannot pass unseen.
 */
export function smallDiskMissing(suite: string): string | null {
  let missing: string | null = null
  try {
    mountSmallDisk(64 * 1024).dispose()
  } catch (error) {
    missing = (error as Error).message
  }
  if (missing !== null && process.env.CI === 'true') throw new Error(`${suite} needs a tmpfs mount: ${missing}. CI runs as root.`)
  return missing
}

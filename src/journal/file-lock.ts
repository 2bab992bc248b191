import { dlopen, FFIType } from 'bun:ffi'

const LOCK_EX = 2
const LOCK_NB = 4

let flock: ((fd: number, operation: number) => number) | null = null

function libcFlock(): (fd: number, operation: number) => number {
  if (flock === null) {
    const libc = dlopen(process.platform === 'darwin' ? 'libc.dylib' : 'libc.so.6', { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } })
    flock = libc.symbols.flock
  }
  return flock
}

/**
 * Takes an exclusive advisory lock on an open file, without waiting. The kernel releases it when
 * the file is closed or its process dies, SIGKILL included: a journal whose lock can be taken has
 * no live owner. (Node and Bun expose no flock; libc's is one call.)
 */
export const tryLockExclusive = (fd: number): boolean => libcFlock()(fd, LOCK_EX | LOCK_NB) === 0

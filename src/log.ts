import pino from 'pino'
import type { LogLevel } from './config/env'

export type Logger = pino.Logger

/** Buffered lines are written at least this often. */
const FLUSH_INTERVAL_MS = 250

/**
 * JSON lines on stdout. Callers pass fields, never secrets or message content. Lines are buffered
 * (up to 8 KiB, written at least every 250 ms and at exit): one write per line cost about a fifth
 * of the gateway's throughput in `bun run bench`. A SIGKILL can lose the last quarter second of log
 * lines; usage is never at risk, it lives in SQLite.
 */
export function createLogger(level: LogLevel, destination: pino.DestinationStream | number = 1): Logger {
  const buffered = typeof destination === 'number'
  const logger = pino(
    {
      level,
      base: { service: 'chatgate' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    buffered ? pino.destination({ dest: destination, sync: false, minLength: 8192 }) : destination,
  )
  if (buffered) setInterval(() => logger.flush(), FLUSH_INTERVAL_MS).unref()
  return logger
}

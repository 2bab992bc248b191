import pino from 'pino'
import type { LogLevel } from './config/env'

export type Logger = pino.Logger

/**
 * JSON lines on stdout. Callers pass fields, never secrets or message content. Writes are
 * asynchronous (buffered by sonic-boom), so logging never blocks a request; call `flush` at exit.
 */
export function createLogger(level: LogLevel, destination: pino.DestinationStream | number = 1): Logger {
  return pino(
    {
      level,
      base: { service: 'chatgate' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    typeof destination === 'number' ? pino.destination({ dest: destination, sync: false }) : destination,
  )
}

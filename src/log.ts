import pino from 'pino'
import type { LogLevel } from './config/env'

export type Logger = pino.Logger

/** JSON lines on stdout. Callers pass fields, never secrets or message content. */
export function createLogger(level: LogLevel, destination: pino.DestinationStream | number = 1): Logger {
  return pino(
    {
      level,
      base: { service: 'chatgate' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    typeof destination === 'number' ? pino.destination({ dest: destination, sync: true }) : destination,
  )
}

import type { Logger } from './log'
import { DAY_MS } from './time'

/** What pruning reads of the gateway (a structural type: this file is re-exported by gateway.ts). */
export interface Prunable {
  stores: { usage: { pruneMinutes(before: number): Promise<number> } }
  conversations: { pruneExpired(): Promise<number> }
  settings: { minuteRetentionDays: number }
  log: Logger
  now: () => number
}

/**
 * Prunes minute rollups past the configured retention, and expired conversations, now and every 10
 * minutes; returns a stop function.
 */
export function startRollupPruning(gateway: Prunable, intervalMs = 600_000): () => void {
  const pruneRollups = () =>
    gateway.stores.usage.pruneMinutes(gateway.now() - gateway.settings.minuteRetentionDays * DAY_MS).then(
      (removed) => {
        if (removed > 0) gateway.log.debug({ removed }, 'pruned minute rollups')
      },
      (error: unknown) => gateway.log.error({ err: error }, 'pruning minute rollups failed; retried in 10 minutes'),
    )
  // Expired records are already invisible to every read: pruning only gives their space back.
  const pruneConversations = () =>
    gateway.conversations.pruneExpired().then(
      (removed) => {
        if (removed > 0) gateway.log.debug({ removed }, 'pruned expired conversations')
      },
      (error: unknown) => gateway.log.error({ err: error }, 'pruning expired conversations failed; retried in 10 minutes'),
    )
  const prune = () => Promise.all([pruneRollups(), pruneConversations()])
  void prune()
  const timer = setInterval(() => void prune(), intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}

import { targetKey } from './circuit'
import type { Alias, Target } from './table'

/** `least_latency` sends every this-many-th request of an alias to another target than the fastest: a probe. */
export const PROBE_EVERY = 20
/** The weight of a new sample in a moving average: about the last five samples count. */
const ALPHA = 0.3

interface TargetStats {
  /** Moving averages in ms of the time to the first token (the answer's start) and of the whole attempt; null: not measured yet. */
  ttftMs: number | null
  durationMs: number | null
  /** This instance's attempts on the target that have started and not ended. */
  inFlight: number
}

/** The targets in the order to try them, and the one asked first as a probe (its sample stands alone). */
export interface TargetPlan {
  targets: Target[]
  probe: Target | null
}

/** An attempt's measurement: started on `key` at `start`; `probe` when the strategy sent it to look. */
export interface Measure {
  key: string
  start: number
  probe: boolean
}

const ewma = (average: number | null, sample: number): number => (average === null ? sample : average + ALPHA * (sample - average))

/**
 * What this instance has seen of each target (upstream + model), for the load-following strategies:
 * moving averages of time to first token and of total duration, and attempts in flight. Per
 * instance, by design: every instance measures its own path to the upstream. Keyed by name, so it
 * lives across config reloads, like the circuits.
 */
export class TargetLoad {
  private readonly stats = new Map<string, TargetStats>()
  /** Requests planned per alias, for the probe's turn. */
  private readonly planned = new Map<string, number>()

  constructor(private readonly clock: () => number = () => performance.now()) {}

  private of(key: string): TargetStats {
    let stats = this.stats.get(key)
    if (!stats) this.stats.set(key, (stats = { ttftMs: null, durationMs: null, inFlight: 0 }))
    return stats
  }

  /** A target's numbers, for tests and the docs' examples. */
  snapshot(target: Target): Readonly<TargetStats> {
    return { ...this.of(targetKey(target)) }
  }

  /** An attempt starts: it counts as in flight until `ended`. */
  started(target: Target, probe: boolean): Measure {
    const key = targetKey(target)
    this.of(key).inFlight++
    return { key, start: this.clock(), probe }
  }

  /**
   * The attempt's answer began (a stream's headers, a JSON answer whole). A probe's sample replaces the
   * average: a target asked once in twenty is judged on its latest look, so a recovery counts at once.
   */
  answered(measure: Measure): void {
    const stats = this.of(measure.key)
    const sample = this.clock() - measure.start
    stats.ttftMs = measure.probe ? sample : ewma(stats.ttftMs, sample)
  }

  /** The attempt ended; `completed` when it ran to its end (its duration is a sample), not when it failed or was left. */
  ended(measure: Measure, completed: boolean): void {
    const stats = this.of(measure.key)
    stats.inFlight--
    if (completed) stats.durationMs = ewma(stats.durationMs, this.clock() - measure.start)
  }

  /**
   * `least_latency`: fastest time to first token first (targets not measured yet before all, so each
   * is measured once), the rest by their averages as the fallback order; every PROBE_EVERY-th request
   * goes first to another target in turn.
   */
  byLatency(alias: Alias): TargetPlan {
    const rank = (t: Target) => this.stats.get(targetKey(t))?.ttftMs ?? -1
    const targets = [...alias.targets].sort((a, b) => rank(a) - rank(b))
    const count = (this.planned.get(alias.name) ?? 0) + 1
    this.planned.set(alias.name, count)
    if (targets.length < 2 || count % PROBE_EVERY !== 0) return { targets, probe: null }
    const others = targets.length - 1
    const index = 1 + ((count / PROBE_EVERY - 1) % others)
    const probe = targets[index]!
    targets.splice(index, 1)
    targets.unshift(probe)
    return { targets, probe }
  }

  /**
   * `least_busy`: the power of two choices. Two distinct targets drawn at random (with two, both) are
   * compared by (in flight + 1) × average duration; the lower goes first, the other second, the rest
   * after in their configured order. A target not measured yet counts the lowest known average (and
   * wins ties), so it gets traffic and a measurement without being flooded.
   */
  byBusy(alias: Alias, random: () => number): TargetPlan {
    const all = alias.targets
    if (all.length < 2) return { targets: all, probe: null }
    let first = 0
    let second = 1
    if (all.length > 2) {
      first = Math.floor(random() * all.length)
      second = (first + 1 + Math.floor(random() * (all.length - 1))) % all.length
    }
    const a = this.stats.get(targetKey(all[first]!))
    const b = this.stats.get(targetKey(all[second]!))
    const known = [a?.durationMs, b?.durationMs].filter((d): d is number => d != null)
    const floor = known.length > 0 ? Math.min(...known) : 1
    const score = (stats: TargetStats | undefined) => ((stats?.inFlight ?? 0) + 1) * (stats?.durationMs ?? floor)
    // On a tie the target not measured yet goes first: it gets its measurement.
    if (score(b) < score(a) || (score(b) === score(a) && b?.durationMs == null && a?.durationMs != null)) [first, second] = [second, first]
    const targets = [all[first]!, all[second]!]
    for (const [i, target] of all.entries()) if (i !== first && i !== second) targets.push(target)
    return { targets, probe: null }
  }
}

import { MemoryTargetLimiter, type TargetLimiter } from '../limits/targets'
import { targetKey } from './circuit'
import { TargetLoad } from './load'
import type { Target } from './table'

/**
 * What routing by load needs on an instance: its own measurements of the targets, and the providers'
 * limits and rests (in memory alone, or shared through Redis by a cluster's instances).
 */
export class TargetRouting {
  readonly load: TargetLoad

  /** `clock`: what attempts are timed by (ms); tests pass their own. */
  constructor(
    readonly limiter: TargetLimiter = new MemoryTargetLimiter(),
    clock?: () => number,
  ) {
    this.load = new TargetLoad(clock)
  }

  /** Charges an answer's tokens to its target's account, when that has a `tpm`. */
  charge(target: Target, tokens: number, now: number): void {
    if (target.limits?.tpm != null) this.limiter.charge(targetKey(target), tokens, now)
  }
}

import type { TargetLimits } from '../../config/types'
import type { TargetAdmission, TargetLimiter, TargetRefusal } from '../../limits/targets'
import { atMostEvery, type Logger } from '../../log'
import { limiterUnavailable, type RedisConnection } from './connection'
import { SCRIPTS } from './scripts'

const limitArg = (value: number | null) => (value === null ? '-1' : String(value))

/**
 * The provider accounts' limits and rests, shared by every instance through Redis. A target with
 * `rpm` / `tpm` costs one round trip per attempt on it (target-admit.lua), exact across instances;
 * targets without cost nothing. Rests are written to Redis before the request that met the 429 goes
 * on, and every instance learns of them with its next admission (admit.lua returns those in force),
 * so checking one costs no round trip at all.
 */
export class RedisTargetLimiter implements TargetLimiter {
  /** Rests as this instance knows them: target -> until (this instance's clock, ms). */
  private readonly rests = new Map<string, number>()
  private readonly mayLogError = atMostEvery(1000)

  constructor(
    private readonly redis: RedisConnection,
    private readonly log: Logger,
  ) {}

  async admit(target: string, limits: TargetLimits, _now: number): Promise<TargetAdmission> {
    let reply: (number | string)[]
    try {
      reply = (await this.redis.run(SCRIPTS.targetAdmit, [`cg:t:${target}`], [limitArg(limits.rpm), limitArg(limits.tpm)])) as (number | string)[]
    } catch (error) {
      this.logError(error, "counting a request against its provider's rpm in Redis failed: the request is refused with 503")
      throw limiterUnavailable()
    }
    if (reply[0] === 1) return { ok: true }
    return { ok: false, reason: reply[1] as TargetRefusal, retryMs: Number(reply[2]) }
  }

  charge(target: string, tokens: number, _now: number): void {
    if (tokens <= 0) return
    this.redis
      .run(SCRIPTS.targetCharge, [`cg:t:${target}`], [String(tokens)])
      .catch((error: unknown) => this.logError(error, "charging an answer's tokens to its provider's tpm in Redis failed"))
  }

  async rest(target: string, ms: number, now: number): Promise<void> {
    this.heard(target, ms, now)
    try {
      this.heard(target, Number(await this.redis.run(SCRIPTS.targetRest, [], [target, String(Math.ceil(ms))])), now)
    } catch (error) {
      // This instance rests the target all the same; the others learn of it from their own 429.
      this.logError(error, 'telling the other instances through Redis that a target rests failed')
    }
  }

  restingMs(target: string, now: number): number {
    const until = this.rests.get(target)
    if (until === undefined) return 0
    if (until > now) return until - now
    this.rests.delete(target)
    return 0
  }

  /** A rest in force, as Redis reported it with an admission: `ms` from `now` on. */
  heard(target: string, ms: number, now: number): void {
    const until = now + ms
    if (until > (this.rests.get(target) ?? 0)) this.rests.set(target, until)
  }

  private logError(error: unknown, message: string): void {
    if (this.mayLogError()) this.log.error({ reason: (error as Error)?.message ?? String(error) }, message)
  }
}

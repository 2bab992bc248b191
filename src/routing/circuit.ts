import type { Target } from './table'

/** A circuit's name: one breaker per upstream and model. */
export const targetKey = (target: Target): string => target.key ?? `${target.upstream.name}/${target.model}`

export type CircuitState = 'closed' | 'open' | 'half_open'

interface Circuit {
  failures: number
  openedAt: number | null
  probing: boolean
}

export interface CircuitSettings {
  failureThreshold: number
  cooldownMs: number
}

/**
 * One breaker per target (upstream + model). After `failureThreshold` consecutive failures the target
 * is skipped for `cooldownMs`; then exactly one probe request is let through, and its outcome closes
 * the circuit or opens it for another cooldown. Lives across config reloads: circuits are keyed by
 * name, not by routing table.
 */
export class CircuitBreakers {
  private readonly circuits = new Map<string, Circuit>()

  constructor(private readonly onOpen: (target: string, failures: number) => void = () => {}) {}

  private circuit(target: string): Circuit {
    let circuit = this.circuits.get(target)
    if (!circuit) {
      circuit = { failures: 0, openedAt: null, probing: false }
      this.circuits.set(target, circuit)
    }
    return circuit
  }

  state(target: string, settings: CircuitSettings, now: number): CircuitState {
    const circuit = this.circuits.get(target)
    if (!circuit || circuit.openedAt === null) return 'closed'
    return now - circuit.openedAt >= settings.cooldownMs ? 'half_open' : 'open'
  }

  /** Whether a request may go to the target now; a half-open circuit admits one probe at a time. */
  tryAcquire(target: string, settings: CircuitSettings, now: number): boolean {
    const state = this.state(target, settings, now)
    if (state === 'closed') return true
    if (state === 'open') return false
    const circuit = this.circuit(target)
    if (circuit.probing) return false
    circuit.probing = true
    return true
  }

  /** Milliseconds until an open circuit lets a probe through (0 when it already would). */
  retryInMs(target: string, settings: CircuitSettings, now: number): number {
    const openedAt = this.circuits.get(target)?.openedAt
    return openedAt == null ? 0 : Math.max(0, openedAt + settings.cooldownMs - now)
  }

  success(target: string): void {
    const circuit = this.circuits.get(target)
    if (!circuit) return
    circuit.failures = 0
    circuit.openedAt = null
    circuit.probing = false
  }

  failure(target: string, settings: CircuitSettings, now: number): void {
    const circuit = this.circuit(target)
    circuit.failures++
    const wasProbe = circuit.probing
    circuit.probing = false
    if (wasProbe || (circuit.openedAt === null && circuit.failures >= settings.failureThreshold)) {
      circuit.openedAt = now
      this.onOpen(target, circuit.failures)
    }
  }

  /** Forgets the circuits of targets no longer configured (after a reload removed them). */
  retain(targets: ReadonlySet<string>): void {
    for (const target of this.circuits.keys()) if (!targets.has(target)) this.circuits.delete(target)
  }

  /** A probe that ended without a verdict (e.g. the caller left) must not block the target forever. */
  abandon(target: string): void {
    const circuit = this.circuits.get(target)
    if (circuit) circuit.probing = false
  }
}

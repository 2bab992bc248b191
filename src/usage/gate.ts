import { overloaded } from '../errors'
import { repeat } from './repeat'

/** How often a gate that is shut asks whether usage can be made durable again. */
const PROBE_INTERVAL_MS = 1000

/**
 * Whether usage can be made durable now. A request whose usage could not be written (a full disk,
 * a journal that fails) shuts the gate: from then on requests are refused with 503
 * `usage_unavailable` before they reach an upstream, so nothing is served that is not counted. While
 * shut, the gate probes the usage pipeline every second and opens again on its first success.
 */
export class UsageGate {
  private failure: string | null = null
  private stopProbing: (() => void) | null = null

  constructor(
    /** Resolves when usage can be made durable now (a write to the journal, or its equivalent). */
    private readonly probe: () => Promise<void>,
    private readonly onChange: (failure: string | null) => void = () => {},
    private readonly intervalMs = PROBE_INTERVAL_MS,
  ) {}

  /** Why usage cannot be recorded now, or null. */
  get unavailable(): string | null {
    return this.failure
  }

  /** Throws the 503 while usage cannot be recorded. */
  check(): void {
    if (this.failure !== null) throw usageUnavailable(this.failure)
  }

  /** A usage write failed: shut the gate until a probe succeeds. Returns the error the caller gets. */
  failed(error: unknown) {
    const reason = (error as Error | null)?.message ?? String(error)
    if (this.failure === null) {
      this.failure = reason
      this.onChange(reason)
      this.stopProbing = repeat(
        () => this.probe().then(() => this.open()),
        this.intervalMs,
        () => {},
      )
    }
    return usageUnavailable(reason)
  }

  private open(): void {
    this.stopProbing?.()
    this.stopProbing = null
    this.failure = null
    this.onChange(null)
  }

  stop(): void {
    this.stopProbing?.()
    this.stopProbing = null
  }
}

/** The 503 of a request whose usage cannot be recorded: it is not served. */
export const usageUnavailable = (reason: string) =>
  overloaded(`Usage cannot be recorded right now (${reason}), so the request was not served; retry shortly`, {
    code: 'usage_unavailable',
    retryAfterSeconds: 1,
  })

/** How the callers waiting on a batch learn its fate. */
export interface Settle {
  resolve: () => void
  reject: (error: unknown) => void
}

/**
 * What is added in one event-loop turn, handed over together at its end (a group commit): many
 * requests answering at once cost one write between them. `add` resolves, or rejects, with the
 * batch it joined, once whoever took it settles it.
 */
export class TurnBatch<T> {
  private items: T[] = []
  private done: Promise<void> | null = null
  private settle: Settle | null = null

  /** `onTurnEnd` runs once at the end of every turn in which something was added: it takes the batch. */
  constructor(private readonly onTurnEnd: () => void) {}

  add(item: T): Promise<void> {
    this.items.push(item)
    if (!this.done) {
      this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }))
      setImmediate(this.onTurnEnd)
    }
    return this.done
  }

  get size(): number {
    return this.items.length
  }

  /** Takes the batch and the promise its callers wait on (the turn's end then finds it empty). */
  take(): { items: T[]; settle: Settle | null } {
    const taken = { items: this.items, settle: this.settle }
    this.items = []
    this.done = null
    this.settle = null
    return taken
  }
}

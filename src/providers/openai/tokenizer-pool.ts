import { internalError } from '../../errors'
import type { TokenAnswer, TokenJob } from './token-worker'

interface Job {
  texts: string[]
  resolve(tokens: number): void
  reject(error: Error): void
}

/** One tokenizer thread, running one job at a time. */
class TokenThread {
  private readonly worker: Worker
  private job: (Job & { id: number }) | null = null
  private dead = false

  constructor(
    url: URL,
    /** Called when the thread is free again, or gone (`dead`: it crashed and must be replaced). */
    private readonly onFree: (thread: TokenThread, dead: boolean) => void,
  ) {
    this.worker = new Worker(url)
    // An idle pool must not keep the process alive at shutdown.
    this.worker.unref()
    this.worker.onmessage = ({ data }: MessageEvent<TokenAnswer>) => {
      const job = this.job
      if (job === null || data.id !== job.id) return
      this.job = null
      if ('error' in data) job.reject(internalError(`The tokenizer failed: ${data.error}`))
      else job.resolve(data.tokens)
      this.onFree(this, false)
    }
    this.worker.onerror = (event) => this.fail(event.message)
    // Bun's event for a thread that ended (it exited, or ran out of memory) without an error event.
    this.worker.addEventListener('close', () => this.fail('it exited'))
  }

  /** The thread is gone: its job fails, and the pool replaces it. */
  private fail(reason: string): void {
    if (this.dead) return
    this.dead = true
    const job = this.job
    this.job = null
    this.worker.terminate()
    job?.reject(internalError(`The tokenizer thread failed: ${reason}`))
    this.onFree(this, true)
  }

  run(job: Job, id: number): void {
    this.job = { ...job, id }
    this.worker.postMessage({ id, texts: job.texts } satisfies TokenJob)
  }
}

/**
 * Worker threads that count tokens, so a big count (about 120 ms for a 1 MB prompt) never stalls
 * the requests the event loop serves meanwhile. At most `size` threads, started on first use;
 * jobs beyond them wait in order. The queue holds only references to texts already in memory
 * (each request's own), so it adds no copies; each key's limits bound how many it can queue.
 */
export class TokenizerPool {
  private readonly idle: TokenThread[] = []
  private readonly queue: Job[] = []
  private threads = 0
  private nextId = 0

  constructor(
    private readonly url: URL,
    private readonly size: number,
  ) {}

  /** The tokens of `texts`, summed. */
  count(texts: string[]): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ texts, resolve, reject })
      this.pump()
    })
  }

  /** Jobs not started yet (for tests and metrics). */
  get waiting(): number {
    return this.queue.length
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let thread = this.idle.pop()
      if (thread === undefined && this.threads < this.size) {
        this.threads++
        thread = new TokenThread(this.url, (free, dead) => this.freed(free, dead))
      }
      if (thread === undefined) return
      thread.run(this.queue.shift()!, ++this.nextId)
    }
  }

  private freed(thread: TokenThread, dead: boolean): void {
    if (dead) {
      // A thread may also die while idle: it must not be handed the next job.
      this.threads--
      const idle = this.idle.indexOf(thread)
      if (idle >= 0) this.idle.splice(idle, 1)
    } else this.idle.push(thread)
    this.pump()
  }
}

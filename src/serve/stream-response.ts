import { clientClosed, GatewayError } from '../errors'
import { type HeaderNames, takeHeaders } from '../http/headers'
import { elapsedMs } from '../observe/request-record'
import { protocolViolation } from '../providers/errors'
import type { Dispatched } from '../routing/dispatch'
import { estimatedTokens } from '../spend/estimate'
import type { Usage } from '../wire/pivot/types'
import type { EventStream, ServeCall, StreamSide } from './exchange'

/** How a relayed stream ended, as it is counted. */
export interface StreamEnd {
  usage: Usage | null
  /** Why it did not end normally (the upstream broke, the caller left); null: it did. */
  failure: GatewayError | null
  /** The usage is the gateway's own estimate: the caller left and the upstream never said. */
  estimated: boolean
}

export interface StreamOptions {
  headers: HeaderNames
  /** How long to go on reading the upstream for its usage once the caller has left. */
  drainMs: number
  /** Counts the stream, once; resolves once its usage is durable, rejects when it cannot be made so. */
  settle(end: StreamEnd): Promise<void>
  /** What the caller gets instead of the stream's end when its usage could not be recorded. */
  unrecorded(error: unknown): GatewayError
  /** Told when the caller leaves before the stream's end (the drain starts). */
  onLeave(): void
  /** Told of each piece of text sent to the caller (the request log's facts and assembled answer). */
  onText(text: string): void
}

/** What a stream the caller cut is charged: what the upstream reported, else an estimate from what was read. */
export function cutStreamUsage(events: EventStream, stream: StreamSide): Usage {
  const reported = events.usage()
  const prompt = reported?.prompt_tokens || stream.estimatedPromptTokens()
  const completion = Math.max(reported?.completion_tokens ?? 0, estimatedTokens(events.generated()))
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

/**
 * Relays an upstream stream to the caller as it arrives. A failure after the first byte cannot fail
 * over any more: the caller gets the exchange's error event and no normal end. A caller who leaves
 * does not end the upstream at once: it is read on for up to `drainMs` for its usage, and when none
 * comes, the stream is charged an estimate of its prompt and of what was generated.
 */
export function streamResponse(options: StreamOptions, call: ServeCall, stream: StreamSide, opened: Dispatched<EventStream>): Response {
  const events = opened.value
  // From here on the caller's disconnect is handled below (a drain), not by aborting the attempt.
  opened.detachClient()
  // One read of the upstream at a time, shared: a drain that starts while the relay waits on a read
  // takes that read's outcome (a failure included) rather than racing it for the next one.
  let reading: Promise<string | null> | null = null
  const read = () => (reading ??= events.next().finally(() => (reading = null)))
  let ended: Promise<void> | null = null
  /** Ends the attempt and counts the stream, once, whoever calls first. */
  const end = (result: StreamEnd): Promise<void> => {
    ended ??= (() => {
      const failure = result.failure
      opened.finish(failure === null || failure.code === 'client_closed' ? 'ok' : 'failed', failure ?? undefined)
      return options.settle(result)
    })()
    return ended
  }

  let left = false
  const leave = () => {
    if (left || ended) return
    left = true
    options.onLeave()
    void drain(options.drainMs, opened, stream, read, end)
  }
  call.clientSignal.addEventListener('abort', leave, { once: true })

  // Text chunks: Bun encodes them as it writes, one copy fewer than a TextEncoder per batch.
  const body = new ReadableStream<string>({
    async pull(controller) {
      for (;;) {
        let text: string | null
        try {
          text = await read()
        } catch (error) {
          if (left) return
          // Providers turn transport failures into GatewayErrors: anything else is an event that could not be read.
          const failure = error instanceof GatewayError ? error : protocolViolation(opened.target.upstream.name, 'a stream event could not be read')
          await end({ usage: events.usage(), failure, estimated: false }).catch(() => {})
          controller.enqueue(stream.failureEvent(failure))
          controller.close()
          return
        }
        if (left) return
        if (text === null) {
          // The end's text is known now (its stop reason, its exact usage): the record has it before it is written.
          const last = events.end()
          if (last !== '') options.onText(last)
          // Counted before the end goes out: a client that saw the end of the stream has been billed.
          try {
            await Promise.all([end({ usage: events.usage(), failure: null, estimated: false }), events.kept?.()])
          } catch (error) {
            controller.enqueue(stream.failureEvent(options.unrecorded(error)))
            controller.close()
            return
          }
          if (last !== '') controller.enqueue(last)
          controller.close()
          return
        }
        if (text === '') continue
        options.onText(text)
        controller.enqueue(text)
        return
      }
    },
    cancel: leave,
  })

  const headers = call.headers
  headers[options.headers.latency] = String(elapsedMs(call.record))
  headers['content-type'] = 'text/event-stream; charset=utf-8'
  headers['cache-control'] = 'no-cache'
  headers.connection = 'keep-alive'
  return new Response(body, { headers: takeHeaders(headers) })
}

/**
 * The caller left: reads the upstream on, discarding what it sends, until it ends (its usage is then
 * exact) or `drainMs` passes (the attempt is then abandoned, which aborts it, and the charge is an
 * estimate). Either way the stream is counted once, as a request the caller cut.
 */
async function drain(
  drainMs: number,
  opened: Dispatched<EventStream>,
  stream: StreamSide,
  read: () => Promise<string | null>,
  end: (result: StreamEnd) => Promise<void>,
): Promise<void> {
  const events = opened.value
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    opened.finish('abandoned', clientClosed())
  }, drainMs)
  let complete = false
  try {
    while ((await read()) !== null);
    complete = true
  } catch (error) {
    // The drain's time ran out, or the upstream broke: what was read is what is known.
    if (!timedOut) opened.finish('failed', error instanceof GatewayError ? error : undefined)
  } finally {
    clearTimeout(timer)
  }
  const usage = complete ? events.usage() : null
  const result = usage ? { usage, estimated: false } : { usage: cutStreamUsage(events, stream), estimated: true }
  await end({ ...result, failure: clientClosed() }).catch(() => {})
  await events.cancel().catch(() => {})
}

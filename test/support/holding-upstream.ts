/**
 * A fake OpenAI-compatible upstream that holds its streams open until the test lets them go: for
 * counting how many upstream requests a gateway has open at once, without waiting on wall time.
 *
 * A request's tag is its last user message. A streaming request gets its first chunk at once, then
 * waits for `release(tag)` or `releaseAll()` and sends the rest (usage, then `[DONE]`), per OpenAI's
 * stream format (https://platform.openai.com/docs/api-reference/chat/streaming). A non-streaming
 * request gets a chat.completion at once; a tag starting with `fail` gets a 500.
 */

export interface HoldingUpstream {
  /** Base URL for an `openai` upstream (…/v1). */
  url: string
  /** Streams that sent their first chunk and wait for their release now. */
  readonly holding: number
  /** Requests that arrived, all kinds. */
  readonly arrived: number
  /** The most streams held at once. */
  readonly mostHeld: number
  seen(tag: string): boolean
  /** Whether the gateway hung up on the stream for `tag` before it ended. */
  aborted(tag: string): boolean
  release(tag: string): void
  /** Lets every held stream end, and every later one go straight through. */
  releaseAll(): void
  stop(): void
}

const encoder = new TextEncoder()
const USAGE = { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 }

function chunks(model: string): { first: Uint8Array; rest: Uint8Array } {
  const base = { id: 'chatcmpl-held', object: 'chat.completion.chunk', created: 1_700_000_000, model }
  const event = (data: object) => `data: ${JSON.stringify({ ...base, ...data })}\n\n`
  return {
    first: encoder.encode(event({ choices: [{ index: 0, delta: { role: 'assistant', content: 'held ' }, finish_reason: null }] })),
    rest: encoder.encode(
      event({ choices: [{ index: 0, delta: { content: 'and let go.' }, finish_reason: null }] }) +
        event({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) +
        event({ choices: [], usage: USAGE }) +
        'data: [DONE]\n\n',
    ),
  }
}

const completion = (model: string) =>
  Response.json({
    id: 'chatcmpl-held',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: 'not held' }, finish_reason: 'stop' }],
    usage: USAGE,
  })

export function holdingUpstream(): HoldingUpstream {
  const waiting = new Map<string, (() => void)[]>()
  const released = new Set<string>()
  const seen = new Set<string>()
  const aborted = new Set<string>()
  let all = false
  let holding = 0
  let mostHeld = 0
  let arrived = 0
  const letGo = (tag: string) =>
    all || released.has(tag) ? Promise.resolve() : new Promise<void>((resolve) => waiting.set(tag, [...(waiting.get(tag) ?? []), resolve]))

  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    // Held streams send nothing for as long as the test likes.
    idleTimeout: 0,
    async fetch(req) {
      const body = (await req.json()) as { model: string; stream?: boolean; messages: { content: string }[] }
      const tag = body.messages.at(-1)?.content ?? ''
      arrived++
      seen.add(tag)
      if (tag.startsWith('fail')) return Response.json({ error: { message: 'failing as asked', type: 'server_error' } }, { status: 500 })
      if (!body.stream) return completion(body.model)
      const { first, rest } = chunks(body.model)
      const hungUp = new Promise<void>((resolve) => req.signal.addEventListener('abort', () => resolve(), { once: true }))
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(first)
          holding++
          mostHeld = Math.max(mostHeld, holding)
          await Promise.race([letGo(tag), hungUp])
          holding--
          if (req.signal.aborted) {
            aborted.add(tag)
            return
          }
          controller.enqueue(rest)
          controller.close()
        },
      })
      return new Response(stream, { headers: { 'content-type': 'text/event-stream' } })
    },
  })

  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    get holding() {
      return holding
    },
    get arrived() {
      return arrived
    },
    get mostHeld() {
      return mostHeld
    },
    seen: (tag) => seen.has(tag),
    aborted: (tag) => aborted.has(tag),
    release(tag) {
      released.add(tag)
      for (const resolve of waiting.get(tag) ?? []) resolve()
      waiting.delete(tag)
    },
    releaseAll() {
      all = true
      for (const resolvers of waiting.values()) for (const resolve of resolvers) resolve()
      waiting.clear()
    },
    stop: () => void server.stop(true),
  }
}

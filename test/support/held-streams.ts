/**
 * A fake upstream that speaks both OpenAI's chat completions stream and Anthropic's Messages stream,
 * and holds each stream part-way until the test releases it: for what happens when a caller cuts a
 * stream before its usage arrives.
 *
 * Wire formats from the providers' references:
 * - OpenAI: https://platform.openai.com/docs/api-reference/chat/streaming (chat.completion.chunk;
 *   with stream_options.include_usage a last chunk with empty choices carries usage; then [DONE]).
 * - Anthropic: https://docs.anthropic.com/en/api/messages-streaming (message_start with usage,
 *   content_block_start / _delta / _stop, message_delta with output usage, message_stop).
 */

/** The usage every finished stream reports (OpenAI names; Anthropic reports the same numbers). */
export const HELD_USAGE = { prompt_tokens: 31, completion_tokens: 17 }
/** The text sent before the hold, in three deltas. */
export const HELD_FIRST_TEXT = ['The quick ', 'brown fox ', 'jumps over ']

const encoder = new TextEncoder()
const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`

function openaiParts(model: string): { first: string[]; rest: string[] } {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    sse({ id: 'chatcmpl-held', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [{ index: 0, delta, finish_reason: finish }] })
  return {
    first: [chunk({ role: 'assistant', content: '' }), ...HELD_FIRST_TEXT.map((content) => chunk({ content }))],
    rest: [
      chunk({ content: 'the lazy dog.' }),
      chunk({}, 'stop'),
      sse({
        id: 'chatcmpl-held',
        object: 'chat.completion.chunk',
        created: 1_700_000_000,
        model,
        choices: [],
        usage: { ...HELD_USAGE, total_tokens: HELD_USAGE.prompt_tokens + HELD_USAGE.completion_tokens },
      }),
      'data: [DONE]\n\n',
    ],
  }
}

function anthropicParts(model: string): { first: string[]; rest: string[] } {
  const delta = (text: string) => sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }, 'content_block_delta')
  return {
    first: [
      sse(
        {
          type: 'message_start',
          message: {
            id: 'msg_held',
            type: 'message',
            role: 'assistant',
            model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: HELD_USAGE.prompt_tokens, output_tokens: 1 },
          },
        },
        'message_start',
      ),
      sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
      ...HELD_FIRST_TEXT.map(delta),
    ],
    rest: [
      delta('the lazy dog.'),
      sse({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
      sse(
        { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: HELD_USAGE.completion_tokens } },
        'message_delta',
      ),
      sse({ type: 'message_stop' }, 'message_stop'),
    ],
  }
}

export interface HeldStreams {
  /** Base URL for an `openai` upstream (…/v1) and an `anthropic` one alike. */
  url: string
  /** Sends the rest of the stream whose last user text is `tag` (now, or as soon as it arrives). */
  release(tag: string): void
  /** Whether the stream for `tag` was aborted by the gateway. */
  aborted(tag: string): boolean
  /** Whether the stream for `tag` was sent to its end. */
  finished(tag: string): boolean
  /** Whether a request for `tag` arrived at all. */
  seen(tag: string): boolean
  stop(): void
}

/** The tag of a request: its last user message's text (a string or the first text part or block). */
function tagOf(body: { messages: { content: unknown }[] }): string {
  const content = body.messages.at(-1)?.content
  if (typeof content === 'string') return content
  const first = (content as { text?: string }[] | undefined)?.[0]
  return first?.text ?? ''
}

export function heldStreams(): HeldStreams {
  const releases = new Map<string, () => void>()
  const released = new Set<string>()
  const aborted = new Set<string>()
  const finished = new Set<string>()
  const seen = new Set<string>()
  const whenReleased = (tag: string) => (released.has(tag) ? Promise.resolve() : new Promise<void>((resolve) => releases.set(tag, resolve)))
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname
      const body = (await req.json()) as { model: string; messages: { content: unknown }[] }
      const tag = tagOf(body)
      seen.add(tag)
      const parts = path.endsWith('/messages') ? anthropicParts(body.model) : openaiParts(body.model)
      req.signal.addEventListener('abort', () => aborted.add(tag), { once: true })
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          for (const part of parts.first) controller.enqueue(encoder.encode(part))
          await Promise.race([whenReleased(tag), new Promise((resolve) => req.signal.addEventListener('abort', resolve, { once: true }))])
          if (req.signal.aborted) return controller.close()
          for (const part of parts.rest) controller.enqueue(encoder.encode(part))
          finished.add(tag)
          controller.close()
        },
      })
      return new Response(stream, { headers: { 'content-type': 'text/event-stream' } })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    release(tag) {
      released.add(tag)
      releases.get(tag)?.()
    },
    aborted: (tag) => aborted.has(tag),
    finished: (tag) => finished.has(tag),
    seen: (tag) => seen.has(tag),
    stop: () => void server.stop(true),
  }
}

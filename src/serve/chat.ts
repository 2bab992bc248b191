import { GatewayError } from '../errors'
import type { JsonBody } from '../wire/json-text'
import type { Target } from '../routing/table'
import { openaiErrorBody } from '../wire/openai-chat/errors'
import { completionJson } from '../wire/openai-chat/answer'
import { ChunkRelay } from '../wire/openai-chat/stream'
import type { ChatRequest, StreamChunk } from '../wire/pivot/types'
import { DEFAULT_OUTPUT_TOKENS, estimatedPromptTokens, inputBound } from '../spend/estimate'
import { generatedChars } from '../wire/pivot/generated'
import { hasMidSystem, placeMidSystem } from '../wire/openai-chat/mid-system'
import { chunksOfCompletion } from '../cache/chunks'
import type { EventStream, Exchange } from './exchange'

const DONE = 'data: [DONE]\n\n'

/** An upstream's chunk batches as the caller's OpenAI SSE text. */
export async function relayChunks(iterator: AsyncIterator<StreamChunk[]>, relay: ChunkRelay): Promise<EventStream> {
  // The first batch is read now: a failure before it is a failed attempt, still retried or failed over.
  let pending: IteratorResult<StreamChunk[]> | null = await iterator.next()
  let generated = 0
  return {
    async next() {
      const result: IteratorResult<StreamChunk[]> = pending ?? (await iterator.next())
      pending = null
      if (result.done) return null
      generated += generatedChars(result.value)
      return relay.wire(result.value)
    },
    usage: () => relay.usage,
    generated: () => generated,
    end: () => DONE,
    cancel: async () => void (await iterator.return?.()),
  }
}

const NONE: readonly string[] = []

/** OpenAI's chat completions, served by any target: OpenAI-compatible ones get the caller's own text. */
export function chatExchange(request: ChatRequest, body: JsonBody | undefined): Exchange {
  // Looked at only for a target whose server refuses a later system message: most never pay for it.
  let midSystem: boolean | undefined
  const moves = (target: Target) => target.upstream.midSystem !== 'keep' && (midSystem ??= hasMidSystem(request.messages))
  const forTarget = (target: Target): ChatRequest => {
    const mode = target.upstream.midSystem
    if (mode === 'keep' || !moves(target)) return { ...request, model: target.model }
    return { ...request, model: target.model, messages: placeMidSystem(request.messages, mode) }
  }
  // The caller's own text goes upstream unless its system messages had to be moved for this target.
  const textFor = (target: Target) => (moves(target) ? undefined : body)
  return {
    model: request.model,
    cannotServe(target) {
      // Most providers serve anything: no copy of the request for them.
      const check = target.provider.cannotServe
      return check ? check(forTarget(target)) : null
    },
    // Asked of the request the target got: its model decides what it can use (Claude on Bedrock reads reasoning_effort).
    dropped: (target) => (target.provider.dropped ? target.provider.dropped(forTarget(target)) : NONE),
    async complete(target, attempt) {
      const { completion, text } = await target.provider.complete(forTarget(target), attempt, textFor(target))
      return { body: completionJson(completion, text, request.model), usage: completion.usage ?? null }
    },
    stream:
      request.stream === true
        ? {
            async open(target, attempt) {
              const iterator = await target.provider.stream(forTarget(target), attempt, textFor(target))
              return relayChunks(iterator, new ChunkRelay(request.model, request.stream_options?.include_usage === true))
            },
            failureEvent: (error: GatewayError) => `data: ${JSON.stringify(openaiErrorBody(error))}\n\n`,
            estimatedPromptTokens: () => estimatedPromptTokens(body?.text ?? JSON.stringify(request)),
          }
        : null,
    tokenBound: () => ({
      inputTokens: inputBound(body?.text ?? JSON.stringify(request)),
      outputTokens: Number(request.max_completion_tokens ?? request.max_tokens ?? DEFAULT_OUTPUT_TOKENS),
    }),
    cache: {
      request,
      text: body?.text,
      fromCache: (answer, usage, stream) =>
        stream
          ? new ChunkRelay(request.model, request.stream_options?.include_usage === true).wire(chunksOfCompletion(JSON.parse(answer), usage)) + DONE
          : answer,
      streamVariant: `${request.model}\n${request.stream_options?.include_usage === true}`,
    },
  }
}

import type { UpstreamSettings } from '../../config/file'
import { type ChatCompletion, type ChatCompletionChunk, type ChatRequest, messageText, type StreamChunk, type Usage } from '../../chat/types'
import { connectionLost, protocolViolation, UpstreamError } from '../errors'
import { postJson, readJson, requireEventStream, transportError, upstreamHeaders } from '../http'
import { readSseBatches } from '../sse'
import type { Provider, ProviderContext, ProviderKind } from '../types'

const ANTHROPIC_VERSION = '2023-06-01'
/** Anthropic requires max_tokens; OpenAI callers usually omit it. */
export const DEFAULT_MAX_TOKENS = 4096

interface AnthropicMessage {
  role: 'user' | 'assistant'
  content: string
}

export interface AnthropicRequest {
  model: string
  messages: AnthropicMessage[]
  max_tokens: number
  system?: string
  temperature?: number
  top_p?: number
  stop_sequences?: string[]
  metadata?: { user_id: string }
  stream?: boolean
}

interface AnthropicUsage {
  input_tokens?: number
  output_tokens?: number
  cache_creation_input_tokens?: number | null
  cache_read_input_tokens?: number | null
}

interface AnthropicMessageResponse {
  id: string
  type: 'message'
  model: string
  content: { type: string; text?: string }[]
  stop_reason: string | null
  usage: AnthropicUsage
}

/** OpenAI chat request -> Anthropic Messages request. System and developer messages become `system`. */
export function toAnthropicRequest(request: ChatRequest): AnthropicRequest {
  const system: string[] = []
  const messages: AnthropicMessage[] = []
  for (const message of request.messages) {
    const text = messageText(message.content)
    if (message.role === 'system' || message.role === 'developer') {
      system.push(text)
      continue
    }
    const role: AnthropicMessage['role'] = message.role === 'assistant' ? 'assistant' : 'user'
    const content = message.role === 'tool' ? `Tool result${message.tool_call_id ? ` (${String(message.tool_call_id)})` : ''}:\n${text}` : text
    const previous = messages.at(-1)
    // Anthropic wants user and assistant turns to alternate: merge neighbours of the same role.
    if (previous?.role === role) previous.content = `${previous.content}\n\n${content}`
    else messages.push({ role, content })
  }
  const out: AnthropicRequest = {
    model: request.model,
    messages,
    max_tokens: request.max_completion_tokens ?? request.max_tokens ?? DEFAULT_MAX_TOKENS,
  }
  if (system.length > 0) out.system = system.join('\n\n')
  // Anthropic's temperature range is 0..1, OpenAI's 0..2.
  if (typeof request.temperature === 'number') out.temperature = Math.min(request.temperature, 1)
  if (typeof request.top_p === 'number') out.top_p = request.top_p
  if (typeof request.stop === 'string') out.stop_sequences = [request.stop]
  else if (Array.isArray(request.stop)) out.stop_sequences = request.stop.filter((s): s is string => typeof s === 'string')
  if (typeof request.user === 'string') out.metadata = { user_id: request.user }
  return out
}

const FINISH_REASONS = new Map([
  ['end_turn', 'stop'],
  ['stop_sequence', 'stop'],
  ['max_tokens', 'length'],
  ['tool_use', 'tool_calls'],
  ['refusal', 'content_filter'],
  ['pause_turn', 'stop'],
])
export const finishReason = (stopReason: string | null | undefined): string | null => (stopReason ? (FINISH_REASONS.get(stopReason) ?? 'stop') : null)

/** Prompt tokens include cache writes and reads: all of them are input the caller is billed for. */
export function toUsage(usage: AnthropicUsage): Usage {
  const prompt = (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0)
  const completion = usage.output_tokens ?? 0
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

export function toChatCompletion(message: AnthropicMessageResponse, model: string): ChatCompletion {
  const text = message.content
    .filter((block) => block.type === 'text')
    .map((block) => block.text ?? '')
    .join('')
  return {
    id: message.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: finishReason(message.stop_reason) }],
    usage: toUsage(message.usage ?? {}),
  }
}

function isMessage(value: unknown): value is AnthropicMessageResponse {
  return (
    typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'message' && Array.isArray((value as { content?: unknown }).content)
  )
}

/** Anthropic's SSE events -> batches of OpenAI chat.completion.chunk objects, ending with a usage chunk. */
async function* anthropicChunks(
  upstream: string,
  model: string,
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  maxEventChars: number,
): AsyncGenerator<StreamChunk[]> {
  let id = 'msg'
  const created = Math.floor(Date.now() / 1000)
  const input: AnthropicUsage = {}
  let outputTokens = 0
  let stopped = false
  const chunk = (delta: ChatCompletionChunk['choices'][number]['delta'], finish: string | null = null): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  })
  try {
    for await (const events of readSseBatches(body, maxEventChars)) {
      // After message_stop, read on to the end of the body so the connection returns to the pool.
      if (stopped) continue
      const batch: ChatCompletionChunk[] = []
      for (const event of events) {
        if (stopped) break
        let data: Record<string, any>
        try {
          data = JSON.parse(event.data) as Record<string, any>
        } catch {
          throw protocolViolation(upstream, 'a stream event is not valid JSON')
        }
        switch (data.type) {
          case 'message_start':
            id = String(data.message?.id ?? id)
            Object.assign(input, data.message?.usage ?? {})
            outputTokens = data.message?.usage?.output_tokens ?? 0
            batch.push(chunk({ role: 'assistant', content: '' }))
            break
          case 'content_block_delta':
            if (data.delta?.type === 'text_delta') batch.push(chunk({ content: String(data.delta.text ?? '') }))
            break
          case 'message_delta':
            if (typeof data.usage?.output_tokens === 'number') outputTokens = data.usage.output_tokens
            if (typeof data.usage?.input_tokens === 'number') input.input_tokens = data.usage.input_tokens
            if (data.delta?.stop_reason) batch.push(chunk({}, finishReason(data.delta.stop_reason)))
            break
          case 'message_stop':
            batch.push({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: toUsage({ ...input, output_tokens: outputTokens }) })
            stopped = true
            break
          case 'error': {
            const error = data.error as { type?: string; message?: string } | undefined
            const overloaded = error?.type === 'overloaded_error'
            if (batch.length > 0) yield batch
            throw new UpstreamError(
              502,
              'upstream_error',
              `Upstream "${upstream}" stream error: ${error?.message ?? 'unknown'}`,
              overloaded ? 'same' : 'other',
              'upstream_stream_error',
            )
          }
          // ping, content_block_start, content_block_stop and future event types carry nothing to relay.
        }
      }
      if (batch.length > 0) yield batch
    }
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  if (!stopped) throw connectionLost(upstream, 'the stream ended before message_stop')
}

/** Anthropic's Messages API, translated to and from OpenAI's chat completion shapes. */
function createAnthropicProvider(settings: UpstreamSettings, context: ProviderContext): Provider {
  const name = settings.name
  const url = `${settings.baseUrl}/messages`
  const headers = upstreamHeaders(settings, context.env, (secret) => ({ 'x-api-key': secret }), { 'anthropic-version': ANTHROPIC_VERSION })

  return {
    async complete(request, attempt) {
      headers.requireSecret()
      const response = await postJson(name, url, headers.json, JSON.stringify(toAnthropicRequest(request)), attempt)
      const { body } = await readJson(name, response, attempt.signal, context.bounds.maxBodyBytes)
      if (!isMessage(body)) throw protocolViolation(name, 'the body is not an Anthropic message')
      return { completion: toChatCompletion(body, request.model), text: null }
    },

    async stream(request, attempt) {
      headers.requireSecret()
      const body = JSON.stringify({ ...toAnthropicRequest(request), stream: true })
      const response = await postJson(name, url, headers.stream, body, attempt)
      return anthropicChunks(name, request.model, requireEventStream(name, response), attempt.signal, context.bounds.maxSseEventChars)
    },
  }
}

export const anthropicKind: ProviderKind = {
  kind: 'anthropic',
  needsBaseUrl: true,
  defaultBaseUrl: 'https://api.anthropic.com/v1',
  models: null,
  create: createAnthropicProvider,
}

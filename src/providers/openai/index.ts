import type { UpstreamSettings } from '../../config/file'
import { GatewayError } from '../../errors'
import type { ChatCompletion, ChatCompletionChunk, ChatRequest } from '../../chat/types'
import { connectionLost, notConfigured, protocolViolation, upstreamHttpError } from '../errors'
import { readSseEvents } from '../sse'
import type { Provider, ProviderKind } from '../types'

/** A failed fetch or body read: our own abort reason (timeout) if we aborted, else a lost connection. */
export function transportError(upstream: string, signal: AbortSignal, error: unknown): GatewayError {
  if (signal.aborted && signal.reason instanceof GatewayError) return signal.reason
  if (error instanceof GatewayError) return error
  return connectionLost(upstream, (error as Error)?.message ?? String(error))
}

/** POSTs JSON and returns the response once its status is 2xx; anything else becomes an UpstreamError. */
export async function postJson(upstream: string, url: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<Response> {
  let response: Response
  try {
    response = await fetch(url, { method: 'POST', headers, body, signal })
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  if (response.ok) return response
  let text = ''
  try {
    text = await response.text()
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  throw upstreamHttpError(upstream, response.status, response.headers, text)
}

/** Reads a whole JSON body, telling a broken connection from garbage. */
export async function readJson(upstream: string, response: Response, signal: AbortSignal): Promise<unknown> {
  const type = response.headers.get('content-type') ?? ''
  let text: string
  try {
    text = await response.text()
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  if (!type.includes('json')) throw protocolViolation(upstream, `expected JSON, got "${type || 'no content type'}"`)
  try {
    return JSON.parse(text)
  } catch {
    throw protocolViolation(upstream, 'the body is not valid JSON')
  }
}

export function requireEventStream(upstream: string, response: Response): ReadableStream<Uint8Array> {
  const type = response.headers.get('content-type') ?? ''
  if (!type.includes('text/event-stream') || !response.body) {
    throw protocolViolation(upstream, `expected an event stream, got "${type || 'no content type'}"`)
  }
  return response.body
}

function isCompletion(value: unknown): value is ChatCompletion {
  return typeof value === 'object' && value !== null && Array.isArray((value as ChatCompletion).choices)
}

async function* openaiChunks(upstream: string, body: ReadableStream<Uint8Array>, signal: AbortSignal): AsyncGenerator<ChatCompletionChunk> {
  try {
    for await (const event of readSseEvents(body)) {
      if (event.data === '[DONE]') return
      let parsed: unknown
      try {
        parsed = JSON.parse(event.data)
      } catch {
        throw protocolViolation(upstream, 'a stream event is not valid JSON')
      }
      const error = (parsed as { error?: { message?: string } }).error
      if (error) throw protocolViolation(upstream, `stream error: ${error.message ?? 'unknown'}`)
      yield parsed as ChatCompletionChunk
    }
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  // An OpenAI stream always ends with [DONE]; without it the answer is cut, whatever came before.
  throw connectionLost(upstream, 'the stream ended before [DONE]')
}

/** Any OpenAI-compatible API: OpenAI, Groq, Together, vLLM, Ollama, LM Studio... */
function createOpenAIProvider(settings: UpstreamSettings, env: Readonly<Record<string, string | undefined>>): Provider {
  const name = settings.name
  const url = `${settings.baseUrl}/chat/completions`
  const secret = settings.apiKeyEnv ? env[settings.apiKeyEnv] : undefined
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' }
  if (secret) headers.authorization = `Bearer ${secret}`
  const streamHeaders = { ...headers, accept: 'text/event-stream' }
  const checkConfigured = () => {
    if (settings.apiKeyEnv && !secret) throw notConfigured(name, settings.apiKeyEnv)
  }

  return {
    async complete(request, signal) {
      checkConfigured()
      const response = await postJson(name, url, headers, JSON.stringify(request), signal)
      const body = await readJson(name, response, signal)
      if (!isCompletion(body)) throw protocolViolation(name, 'the body is not a chat completion')
      return body
    },

    async stream(request, signal) {
      checkConfigured()
      // Always ask for the usage chunk: usage must be exact even when the caller did not ask for it.
      const upstreamRequest: ChatRequest = {
        ...request,
        stream: true,
        stream_options: { ...(request.stream_options ?? {}), include_usage: true },
      }
      const response = await postJson(name, url, streamHeaders, JSON.stringify(upstreamRequest), signal)
      return openaiChunks(name, requireEventStream(name, response), signal)
    },
  }
}

export const openaiKind: ProviderKind = {
  kind: 'openai',
  needsBaseUrl: true,
  defaultBaseUrl: 'https://api.openai.com/v1',
  models: null,
  create: createOpenAIProvider,
}

/**
 * Google's generateContent API relayed as sent (the Provider's `gemini`), for Gemini-native callers
 * (Gemini CLI, the Google GenAI SDK): the caller's body goes to the target's model as it is, and its
 * answer, stream events and token count come back as Google wrote them.
 */
import type { CountTokensResponse, GenerateContentResponse } from '../../wire/gemini/types'
import { connectionLost, protocolViolation, streamError, UpstreamError } from '../errors'
import { readJson, requireEventStream, transportError } from '../http'
import { readSseBatches } from '../sse'
import type { GeminiApi, GeminiEvent } from '../types'
import { googleErrorOf, type GoogleCalls, isAnswer } from './google'

/** One event as sent, parsed; or why it is not one (not JSON, Google's error mid-stream, no answer). */
function eventOf(upstream: string, data: string): GeminiEvent | UpstreamError {
  let chunk: unknown
  try {
    chunk = JSON.parse(data)
  } catch {
    return protocolViolation(upstream, 'a stream event is not valid JSON')
  }
  const error = typeof chunk === 'object' && chunk !== null && 'error' in chunk ? googleErrorOf(data) : null
  if (error) return streamError(upstream, error.message, error.status === 'UNAVAILABLE' || error.status === 'RESOURCE_EXHAUSTED')
  return isAnswer(chunk) ? { data, chunk } : protocolViolation(upstream, 'a stream event is not a generateContent answer')
}

const finishes = (chunk: GenerateContentResponse) =>
  chunk.candidates?.[0]?.finishReason !== undefined || (!chunk.candidates && chunk.promptFeedback?.blockReason !== undefined)

/** Google's stream as batches of its events, as they arrive; one that ends before a finish reason was cut. */
async function* geminiEvents(upstream: string, body: ReadableStream<Uint8Array>, signal: AbortSignal, maxEventChars: number): AsyncGenerator<GeminiEvent[]> {
  let finished = false
  try {
    for await (const events of readSseBatches(body, maxEventChars)) {
      const batch: GeminiEvent[] = []
      for (const sse of events) {
        const event = eventOf(upstream, sse.data)
        if (event instanceof UpstreamError) {
          if (batch.length > 0) yield batch
          throw event
        }
        finished ||= finishes(event.chunk)
        batch.push(event)
      }
      if (batch.length > 0) yield batch
    }
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  if (!finished) throw connectionLost(upstream, 'the stream ended before its finish reason')
}

/**
 * The relay over a kind's POST. `countBody` adapts a countTokens body in the Gemini API's shape to
 * the kind's (Vertex AI takes the members of `generateContentRequest` directly); `serves` says which
 * models take this API (absent: all).
 */
export function nativeGemini(calls: GoogleCalls, countBody: (body: string) => string = (body) => body, serves?: (model: string) => boolean): GeminiApi {
  const { name, context } = calls
  return {
    ...(serves ? { serves } : {}),
    async generateContent(model, body, attempt) {
      const response = await calls.post(model, 'generateContent', body, attempt)
      const { text, body: answer } = await readJson(name, response, attempt.signal, context.bounds.maxBodyBytes)
      if (!isAnswer(answer)) throw protocolViolation(name, 'the body is not a generateContent answer')
      return { text, response: answer }
    },
    async streamGenerateContent(model, body, attempt) {
      const response = await calls.post(model, 'streamGenerateContent', body, attempt, true)
      return geminiEvents(name, requireEventStream(name, response), attempt.signal, context.bounds.maxSseEventChars)
    },
    async countTokens(model, body, attempt) {
      const response = await calls.post(model, 'countTokens', countBody(body), attempt)
      const { body: answer } = await readJson(name, response, attempt.signal, context.bounds.maxBodyBytes)
      if (typeof (answer as Partial<CountTokensResponse> | null)?.totalTokens !== 'number') throw protocolViolation(name, 'the token count has no totalTokens')
      return answer as CountTokensResponse
    },
  }
}

/** A Gemini API countTokens body as Vertex AI takes it: `generateContentRequest`'s members at the top, its `model` left out. */
export function vertexCountBody(body: string): string {
  try {
    const parsed = JSON.parse(body) as { generateContentRequest?: Record<string, unknown> }
    if (typeof parsed.generateContentRequest !== 'object' || parsed.generateContentRequest === null) return body
    const { contents, systemInstruction, tools } = parsed.generateContentRequest
    return JSON.stringify({ contents, ...(systemInstruction ? { systemInstruction } : {}), ...(tools ? { tools } : {}) })
  } catch {
    return body
  }
}

/**
 * One HTTP call whose error responses a kind maps its own way (Azure's content filter, Bedrock's
 * x-amzn-ErrorType): what http.ts's sendRequest does, with the mapping given. The openai kind itself
 * keeps sendRequest and its generic mapping.
 */
import type { UpstreamError } from '../errors'
import { transportError, withTrace } from '../http'
import type { AttemptContext } from '../types'

/** An error response (status, headers, up to 64 KiB of body text) as the gateway's error. */
export type ErrorMapping = (upstream: string, status: number, headers: Headers, text: string) => UpstreamError

/** A sender with sendRequest's signature (http.ts). */
export type Send = (
  upstream: string,
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  headers: Record<string, string>,
  body: string | null,
  attempt: AttemptContext,
) => Promise<Response>

/** An error body is read for its message only: this much is plenty. */
const MAX_ERROR_BODY_BYTES = 65_536

/** Up to MAX_ERROR_BODY_BYTES of an error body; '' when it is longer (its message is then the status). */
async function errorText(response: Response): Promise<string> {
  if (Number(response.headers.get('content-length') ?? 0) > MAX_ERROR_BODY_BYTES || !response.body) {
    await response.body?.cancel().catch(() => {})
    return ''
  }
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > MAX_ERROR_BODY_BYTES) {
      await reader.cancel().catch(() => {})
      return ''
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** A sender that returns the response once its status is 2xx, and maps anything else with `mapError`. */
export function sendWith(mapError: ErrorMapping): Send {
  return async (upstream, method, url, headers, body, attempt) => {
    let response: Response
    try {
      response = await fetch(url, { method, headers: withTrace(headers, attempt), body, signal: attempt.signal })
    } catch (error) {
      throw transportError(upstream, attempt.signal, error)
    }
    attempt.responded()
    if (response.ok) return response
    let text: string
    try {
      text = await errorText(response)
    } catch (error) {
      throw transportError(upstream, attempt.signal, error)
    }
    throw mapError(upstream, response.status, response.headers, text)
  }
}

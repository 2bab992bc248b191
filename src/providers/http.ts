import { GatewayError } from '../errors'
import type { UpstreamSettings } from '../config/file'
import { connectionLost, notConfigured, protocolViolation, upstreamHttpError } from './errors'
import type { AttemptContext } from './types'

/** A failed fetch or body read: our own abort reason (timeout) if we aborted, else a lost connection. */
export function transportError(upstream: string, signal: AbortSignal, error: unknown): GatewayError {
  if (signal.aborted && signal.reason instanceof GatewayError) return signal.reason
  if (error instanceof GatewayError) return error
  return connectionLost(upstream, (error as Error)?.message ?? String(error))
}

/** POSTs JSON and returns the response once its status is 2xx; anything else becomes an UpstreamError. */
export async function postJson(upstream: string, url: string, headers: Record<string, string>, body: string, attempt: AttemptContext): Promise<Response> {
  let response: Response
  try {
    response = await fetch(url, { method: 'POST', headers, body, signal: attempt.signal })
  } catch (error) {
    throw transportError(upstream, attempt.signal, error)
  }
  attempt.responded()
  if (response.ok) return response
  let text = ''
  try {
    text = await response.text()
  } catch (error) {
    throw transportError(upstream, attempt.signal, error)
  }
  throw upstreamHttpError(upstream, response.status, response.headers, text)
}

/** Reads a whole JSON body, telling a broken connection from garbage; returns the text and its parse. */
export async function readJson(upstream: string, response: Response, signal: AbortSignal): Promise<{ text: string; body: unknown }> {
  const type = response.headers.get('content-type') ?? ''
  let text: string
  try {
    text = await response.text()
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  if (!type.includes('json')) throw protocolViolation(upstream, `expected JSON, got "${type || 'no content type'}"`)
  try {
    return { text, body: JSON.parse(text) }
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

export interface UpstreamHeaders {
  json: Record<string, string>
  stream: Record<string, string>
  /** Throws `upstream_not_configured` when the key variable the config names is not set. */
  requireSecret(): void
}

/** Request headers for an HTTP upstream, its secret (read once, from the variable the config names) included. */
export function upstreamHeaders(
  settings: UpstreamSettings,
  env: Readonly<Record<string, string | undefined>>,
  credentials: (secret: string) => Record<string, string>,
  extra: Record<string, string> = {},
): UpstreamHeaders {
  const secret = settings.apiKeyEnv ? env[settings.apiKeyEnv] : undefined
  const json = { 'content-type': 'application/json', accept: 'application/json', ...extra, ...(secret ? credentials(secret) : {}) }
  return {
    json,
    stream: { ...json, accept: 'text/event-stream' },
    requireSecret() {
      if (settings.apiKeyEnv && !secret) throw notConfigured(settings.name, settings.apiKeyEnv)
    },
  }
}

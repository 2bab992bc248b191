/**
 * What the Responses API tests share: requests to a gateway, SSE read back event by event (the raw
 * text of each too, for byte-for-byte comparisons), and small config pieces.
 */
import { expect } from 'bun:test'
import { streamEventErrors } from '../support/openapi'

export interface SseEvent {
  /** The `event:` name, or null. */
  event: string | null
  /** The `data:` text exactly as sent. */
  text: string
  /** Its parse. */
  data: any
}

/** A server-sent events body as its events, in order. */
export function sseEvents(body: string): SseEvent[] {
  return body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n')
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? null
      const text = lines
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n')
      let data: unknown = null
      try {
        data = JSON.parse(text)
      } catch {
        data = null
      }
      return { event, text, data }
    })
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

/** POST /v1/responses (or another path) with a JSON body as given (a string is sent as is). */
export const postJson = (url: string, key: string, body: unknown, path = '/v1/responses', headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(key), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })

export const get = (url: string, key: string, path: string, method = 'GET') => fetch(`${url}${path}`, { method, headers: bearer(key) })

/** A created response: status 200 expected, its JSON. */
export async function created(response: Response): Promise<any> {
  const text = await response.text()
  expect({ status: response.status, text: response.status === 200 ? '' : text }).toEqual({ status: 200, text: '' })
  return JSON.parse(text)
}

/**
 * A translated stream, checked as the contract says: every event named by its type, numbered from 0
 * without a gap, each valid against its own schema in OpenAI's published document.
 */
export function checkedStream(body: string): SseEvent[] {
  const events = sseEvents(body)
  expect(events.map((e) => e.data?.sequence_number)).toEqual(events.map((_, i) => i))
  for (const e of events) {
    expect(e.event).toBe(e.data.type)
    expect({ type: e.data.type, errors: streamEventErrors(e.data) }).toEqual({ type: e.data.type, errors: null })
  }
  return events
}

export const types = (events: SseEvent[]) => events.map((e) => e.data.type as string)

/** A tier no test runs out of. */
export const OPEN_TIER = `
[tiers.open]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000
`

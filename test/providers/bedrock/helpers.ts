/** What the Bedrock and Azure end-to-end tests share: calls to the gateway and streams read back. */
import { bearer, sseEvents, type SseEvent } from '../../responses/helpers'

export type Json = Record<string, any>

export const post = (url: string, key: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(key), ...headers }, body: JSON.stringify(body) })

/** A JSON answer: its status, body and the headers a test looks at. */
export async function answer(
  response: Response,
): Promise<{ status: number; body: Json; upstream: string | null; attempts: string | null; retryAfter: string | null }> {
  const text = await response.text()
  let body: Json = {}
  try {
    body = JSON.parse(text)
  } catch {
    body = { text }
  }
  return {
    status: response.status,
    body,
    upstream: response.headers.get('x-svc-upstream'),
    attempts: response.headers.get('x-svc-attempts'),
    retryAfter: response.headers.get('retry-after'),
  }
}

/** A streamed answer's events (chat: `data:` JSON, [DONE] left out). */
export async function events(response: Response): Promise<SseEvent[]> {
  const text = await response.text()
  if (response.status !== 200) throw new Error(`expected a stream, got ${response.status}: ${text}`)
  return sseEvents(text).filter((e) => e.text !== '[DONE]')
}

/** A chat stream put together: its text, reasoning, tool calls, thinking blocks, finish reason, usage and any error. */
export function chatStream(list: SseEvent[]) {
  let content = ''
  let reasoning = ''
  let finish: string | null = null
  let usage: Json | null = null
  let error: Json | null = null
  const calls = new Map<number, { id: string; name: string; arguments: string }>()
  const thinking: Json[] = []
  for (const { data } of list) {
    if (data?.error) error = data.error
    if (data?.usage) usage = data.usage
    for (const choice of data?.choices ?? []) {
      const delta = choice.delta ?? {}
      content += delta.content ?? ''
      reasoning += delta.reasoning_content ?? ''
      thinking.push(...(delta.thinking_blocks ?? []))
      for (const call of delta.tool_calls ?? []) {
        const entry = calls.get(call.index) ?? { id: '', name: '', arguments: '' }
        entry.id ||= call.id ?? ''
        entry.name += call.function?.name ?? ''
        entry.arguments += call.function?.arguments ?? ''
        calls.set(call.index, entry)
      }
      finish = choice.finish_reason ?? finish
    }
  }
  return { content, reasoning, finish, usage, error, calls: [...calls.values()], thinking }
}

/** What the request log's tests share: a config with a mock and a fake OpenAI upstream, admin calls, records. */
import type { LoggedRequest } from '../../src/request-log/entry'

export const ADMIN_KEY = 'admin-key-for-request-log-tests-0'

export const TIERS = `
[tiers.open]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000

[tiers.tight]
requests_per_minute = 1
tokens_per_minute = 100000
max_concurrent = 10
`

export const MOCK = `
[upstreams.local]
kind = "mock"

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]

[aliases."local/embed"]
targets = [{ upstream = "local", model = "embed" }]
`

export const admin = (url: string, path: string) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })

export async function createKey(url: string, tier: string): Promise<{ key: string; id: string; prefix: string }> {
  const response = await fetch(`${url}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `${tier} key`, tier }),
  })
  if (response.status !== 201) throw new Error(`creating a key failed: ${response.status} ${await response.text()}`)
  return (await response.json()) as { key: string; id: string; prefix: string }
}

/** One record by request id, or the status the admin API answered. */
export async function recordOf(url: string, id: string): Promise<LoggedRequest> {
  const response = await admin(url, `/admin/requests/${encodeURIComponent(id)}`)
  if (response.status !== 200) throw new Error(`GET /admin/requests/${id}: ${response.status} ${await response.text()}`)
  return (await response.json()) as LoggedRequest
}

export interface Page {
  data: LoggedRequest[]
  next_cursor: string | null
}

export const page = async (url: string, query: string): Promise<Page> => {
  const response = await admin(url, `/admin/requests?${query}`)
  if (response.status !== 200) throw new Error(`GET /admin/requests?${query}: ${response.status} ${await response.text()}`)
  return (await response.json()) as Page
}

/** Every record matching `query`, page after page. */
export async function everyRecord(url: string, query = '', limit = 500): Promise<LoggedRequest[]> {
  const records: LoggedRequest[] = []
  let cursor: string | null = null
  do {
    const params = new URLSearchParams(query)
    params.set('limit', String(limit))
    if (cursor !== null) params.set('cursor', cursor)
    const next: Page = await page(url, params.toString())
    records.push(...next.data)
    cursor = next.next_cursor
  } while (cursor !== null)
  return records
}

export const post = (url: string, path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })

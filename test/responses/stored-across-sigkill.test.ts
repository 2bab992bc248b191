/**
 * A stored response is durable once the caller got it: on SQLite it is in the process's
 * conversation journal (not yet in the database) when the answer goes out, so a gateway killed with
 * SIGKILL right after leaves it to the next process on the same file, which folds it at start.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { tempDir } from '../support/gateway'
import { spawnGateway } from '../support/process'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

type Json = Record<string, any>

const call = (url: string, key: string, path: string, body?: unknown) =>
  fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  })

const texts = (items: Json[]) => items.flatMap((item) => (item.content ?? []).map((part: Json) => part.text))
const journals = (dir: string) => readdirSync(dir).filter((name) => name.startsWith('gateway.sqlite.conversations-'))

describe('stored responses on SQLite across a SIGKILL', () => {
  test('a response answered right before the process is killed is continued by the next process with previous_response_id', async () => {
    using dir = tempDir()
    const env = { GATEWAY_DB: `${dir.path}/gateway.sqlite` }
    const first = await spawnGateway(env, { expectFirstKey: true })
    const key = first.firstKey!
    const answered = await call(first.url, key, '/v1/responses', { model: 'local/echo', input: 'the first question' })
    expect(answered.status).toBe(200)
    const kept = (await answered.json()) as Json
    // Streamed too: the stream's response.completed was read, so the response is kept.
    const streamed = await call(first.url, key, '/v1/responses', { model: 'local/echo', input: 'a streamed question', stream: true })
    const events = await streamed.text()
    expect(events).toContain('response.completed')
    const streamedId = /"id":"(resp_[^"]+)"/.exec(events)![1]!
    // Killed at once: the responses are in its journal, folded into the database only every second.
    expect(await first.stop('SIGKILL')).not.toBe(0)
    expect(journals(dir.path)).toHaveLength(1)

    const second = await spawnGateway(env)
    try {
      // The killed process's journal was folded at start and removed.
      expect(journals(dir.path)).toHaveLength(1)
      const continued = await call(second.url, key, '/v1/responses', { model: 'local/echo', previous_response_id: kept.id, input: 'the second question' })
      expect(continued.status).toBe(200)
      const next = (await continued.json()) as Json
      expect(next.previous_response_id).toBe(kept.id)
      const items = (await (await call(second.url, key, `/v1/responses/${next.id}/input_items?order=asc`)).json()) as Json
      expect(texts(items.data)).toEqual(['the first question', ...texts(kept.output), 'the second question'])
      expect(((await (await call(second.url, key, `/v1/responses/${kept.id}`)).json()) as Json).id).toBe(kept.id)
      const again = await call(second.url, key, '/v1/responses', { model: 'local/echo', previous_response_id: streamedId, input: 'more' })
      expect(again.status).toBe(200)
    } finally {
      await second.stop()
    }
    // A clean stop folds and removes its own journal.
    expect(journals(dir.path)).toEqual([])
  })
})

/**
 * Anthropic's own SDK (its message threads and its tool runner) against a small server that holds
 * threads with src/conversations the way the Messages pipeline is meant to, in front of a fake
 * non-Anthropic model: the wire format of docs/threads.md, checked by the client that defines it.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import Anthropic from '@anthropic-ai/sdk'
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema'
import { Conversations } from '../../src/conversations/conversations'
import { MESSAGE_THREADS_BETA } from '../../src/conversations/threads'
import { GatewayError } from '../../src/errors'
import { statusOf } from '../../src/http/errors'
import { openSqliteStores } from '../../src/storage/sqlite'
import type { Stores } from '../../src/storage/types'
import { DAY_MS } from '../../src/time'
import type { ContentBlock, MessagesRequest } from '../../src/wire/anthropic/types'
import { setupEach, teardownEach, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

interface Seen {
  body: MessagesRequest
  beta: string | null
  /** How many messages the model was given, the history rebuilt. */
  modelSaw: number
}

/** A model that calls the `weather` tool once when asked about weather, then answers; it says how much history it saw. */
function fakeModel(request: MessagesRequest, id: string) {
  const last = request.messages.at(-1)!
  const blocks = typeof last.content === 'string' ? [{ type: 'text', text: last.content } as ContentBlock] : last.content
  const result = blocks.find((b) => b.type === 'tool_result')
  const text = blocks.find((b) => b.type === 'text')
  const content: ContentBlock[] =
    result === undefined && text?.type === 'text' && text.text.includes('weather') && request.tools?.length
      ? [{ type: 'tool_use', id: `toolu_${id}`, name: 'weather', input: { city: 'Paris' } }]
      : [{ type: 'text', text: `seen ${request.messages.length}: ${result ? JSON.stringify(result.content) : text?.type === 'text' ? text.text : ''}` }]
  const stop = content[0]!.type === 'tool_use' ? 'tool_use' : 'end_turn'
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: request.model,
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 },
  }
}

/** Anthropic's error body with the `details.error_code` the SDK reads thread errors from. */
const errorResponse = (error: GatewayError) =>
  Response.json(
    { type: 'error', error: { type: error.type, message: error.message, details: error.code ? { error_code: error.code } : null }, request_id: null },
    { status: statusOf(error) },
  )

/**
 * The Messages route as the pipeline is to run it for a non-Anthropic target: begin the thread turn
 * (its errors answered in Anthropic's shape), send the target the turn's request, record the
 * answer before it goes out, release whatever happened.
 */
function threadServer(conversations: Conversations, seen: Seen[]): ReturnType<typeof Bun.serve> {
  let answers = 0
  return Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const body = (await request.json()) as MessagesRequest
      // The key, however this SDK version sends it: the thread belongs to it.
      const key = request.headers.get('x-api-key') ?? request.headers.get('authorization')!.replace(/^Bearer /, '')
      const entry: Seen = { body, beta: request.headers.get('anthropic-beta'), modelSaw: 0 }
      seen.push(entry)
      let turn
      try {
        turn = await conversations.beginThread(body, key)
      } catch (error) {
        return errorResponse(error as GatewayError)
      }
      try {
        const upstreamRequest = turn ? turn.requestFor(false).request : body
        entry.modelSaw = upstreamRequest.messages.length
        const message = fakeModel(upstreamRequest, `msg_${++answers}`)
        await turn?.record(message, 'openai', false)
        return Response.json(message)
      } finally {
        await turn?.release()
      }
    },
  })
}

describe("Anthropic's SDK threads through the gateway's thread logic, to a non-Anthropic model", () => {
  let stores: Stores
  let server: ReturnType<typeof Bun.serve>
  let seen: Seen[]
  let client: (key?: string) => Anthropic

  setupEach(() => {
    stores = openSqliteStores(':memory:')
    seen = []
    server = threadServer(new Conversations(stores.conversations, { ttlMs: () => DAY_MS, now: Date.now }), seen)
    client = (key = 'key-a') => new Anthropic({ apiKey: key, baseURL: `http://127.0.0.1:${server.port}`, maxRetries: 0 })
  })
  teardownEach(async () => {
    await server.stop(true)
    await stores.close()
  })

  test('a thread sends only its new messages; the model gets the whole conversation every turn', async () => {
    const thread = client().beta.messages.thread({ model: 'openai/fast', max_tokens: 64, system: 'Be brief.' })
    const first = await thread.send({ role: 'user', content: 'hello' })
    const second = await thread.send({ role: 'user', content: 'again' })
    expect(second.content as unknown).toEqual([{ type: 'text', text: 'seen 3: again' }])
    expect(seen.map((s) => s.body.thread)).toEqual([{ type: 'create' }, { type: 'continue', previous_message_id: first.id }])
    expect(seen[1]!.body.messages).toEqual([{ role: 'user', content: 'again' }])
    expect(seen[1]!.body.system).toBeUndefined()
    expect(seen.every((s) => s.beta?.includes(MESSAGE_THREADS_BETA))).toBe(true)
    expect(seen.map((s) => s.modelSaw)).toEqual([1, 3])
  })

  test('the tool runner: the tool result goes as a continue, and the final answer saw the call and its result', async () => {
    const weather = betaTool({
      name: 'weather',
      description: 'The weather in a city',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      run: ({ city }) => `sunny in ${city}`,
    })
    const final = await client().beta.messages.toolRunner({
      model: 'openai/fast',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'what is the weather?' }],
      tools: [weather],
    })
    expect(final.content as unknown).toEqual([{ type: 'text', text: 'seen 3: "sunny in Paris"' }])
    expect(seen.map((s) => (s.body.thread as { type: string }).type)).toEqual(['create', 'continue'])
    expect(seen[1]!.body.tools).toBeUndefined()
    expect(seen[1]!.body.messages).toEqual([{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_msg_1', content: 'sunny in Paris' }] }])
  })

  test('a thread the gateway lost: thread_not_found, and the SDK replays the conversation in full under a new thread', async () => {
    const thread = client().beta.messages.thread({ model: 'openai/fast', max_tokens: 64 })
    const first = await thread.send({ role: 'user', content: 'hello' })
    await stores.conversations.delete({ keyId: 'key-a', id: first.id })
    const second = await thread.send({ role: 'user', content: 'still there?' })
    expect(second.content as unknown).toEqual([{ type: 'text', text: 'seen 3: still there?' }])
    expect(seen.map((s) => (s.body.thread as { type: string }).type)).toEqual(['create', 'continue', 'create'])
    expect(seen[2]!.body.messages.length).toBe(3)
  })

  test("another key's thread is not found, in the error class the SDK gives thread_not_found", async () => {
    const first = await client('key-a').beta.messages.thread({ model: 'openai/fast', max_tokens: 64 }).send({ role: 'user', content: 'mine' })
    const error = await client('key-b')
      .beta.messages.create({
        model: 'openai/fast',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'yours?' }],
        thread: { type: 'continue', previous_message_id: first.id },
      })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Anthropic.ThreadNotFoundError)
    expect(error).toMatchObject({ status: 404, errorCode: 'thread_not_found' })
  })
})

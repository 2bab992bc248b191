import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { AnswerAssembler } from '../../src/conversations/answer'
import { Conversations } from '../../src/conversations/conversations'
import { MAX_RECORD_BYTES } from '../../src/conversations/store'
import type { ThreadTurn } from '../../src/conversations/threads'
import type { GatewayError } from '../../src/errors'
import { openPostgresStores } from '../../src/storage/postgres'
import { openSqliteStores } from '../../src/storage/sqlite'
import type { Stores } from '../../src/storage/types'
import { DAY_MS } from '../../src/time'
import type { MessagesRequest, StreamEvent } from '../../src/wire/anthropic/types'
import { setup, setupEach, teardown, teardownEach, TEST_MS } from '../support/hooks'
import { describeWithServers, sharedPostgres } from '../support/servers'

setDefaultTimeout(TEST_MS)

const T0 = 1_800_000_000_000
const SYSTEM = [{ type: 'text' as const, text: 'You are terse.', cache_control: { type: 'ephemeral' as const } }]
const TOOLS = [{ name: 'lookup', description: 'Looks up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }]

const ask = (over: Partial<MessagesRequest> & Record<string, unknown> = {}): MessagesRequest => ({
  model: 'openai/fast',
  max_tokens: 100,
  messages: [{ role: 'user', content: [{ type: 'text', text: 'first', cache_control: { type: 'ephemeral' } }] }],
  ...over,
})
const continueFrom = (id: string, over: Partial<MessagesRequest> & Record<string, unknown> = {}) =>
  ask({ thread: { type: 'continue', previous_message_id: id }, messages: [{ role: 'user', content: `after ${id}` }], ...over })
const answer = (id: string, text = `answer ${id}`) => ({ id, content: [{ type: 'text' as const, text }] })

/** What a thread error carries: its status-deciding type and its code. */
const failure = (promise: Promise<unknown>): Promise<{ type: string; code: string | undefined } | null> =>
  promise.then(
    () => null,
    (error: GatewayError) => ({ type: error.type, code: error.code }),
  )

let keys = 0

const clock = { now: T0 }
const newKey = () => `key-${++keys}`

/** A turn served by a translated (non-Anthropic) target and recorded. */
async function served(turn: ThreadTurn | null, id: string) {
  expect(turn).not.toBeNull()
  expect(await turn!.record(answer(id), 'openai', false)).toBe(true)
}

/** The thread logic over a real store: the same tests run on SQLite (in memory) and Postgres. */
function threadTests(storeOf: () => Stores) {
  const conversations = () => new Conversations(storeOf().conversations, { ttlMs: () => DAY_MS, now: () => clock.now, claimMs: 60_000 })
  translatedTargetTests(conversations)
  ruleTests(conversations)
  anthropicTargetTests(conversations)
}

/** Targets that are not Anthropic: the gateway holds the thread and sends the full history. */
function translatedTargetTests(conversations: () => Conversations) {
  test('no thread: nothing to do; a malformed one: 400 naming the field', async () => {
    const c = conversations()
    expect(await c.beginThread(ask(), newKey())).toBeNull()
    expect(await c.beginThread(ask({ thread: null }), newKey())).toBeNull()
    for (const [thread, param] of [
      ['create', 'thread'],
      [{ type: 'fork' }, 'thread.type'],
      [{ type: 'continue' }, 'thread.previous_message_id'],
      [{ type: 'continue', previous_message_id: 'x'.repeat(300) }, 'thread.previous_message_id'],
    ] as const) {
      await expect(c.beginThread(ask({ thread }), newKey())).rejects.toMatchObject({ type: 'invalid_request_error', param })
    }
  })

  test('create then continue on a translated target: the full history, system and tools of the first turn, no thread', async () => {
    const c = conversations()
    const key = newKey()
    const create = await c.beginThread(ask({ thread: { type: 'create' }, system: SYSTEM, tools: TOOLS }), key)
    expect(create!.requestFor(false)).toEqual({ request: ask({ system: SYSTEM, tools: TOOLS }), asSent: false })
    await served(create, 'msg_1')

    const next = await c.beginThread(continueFrom('msg_1'), key)
    const { request, asSent } = next!.requestFor(false)
    expect(asSent).toBe(false)
    expect(request.thread).toBeUndefined()
    expect(request.system).toEqual(SYSTEM)
    expect(request.tools).toEqual(TOOLS)
    // The old turn's cache marker is cleared (a history sent again must not pile them up); the new turn keeps its own.
    expect(request.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'first' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'answer msg_1' }] },
      { role: 'user', content: 'after msg_1' },
    ])
    await served(next, 'msg_2')
    const third = await c.beginThread(continueFrom('msg_2', { messages: [{ role: 'user', content: 'third' }] }), key)
    expect(third!.requestFor(false).request.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user'])
    await third!.release()
  })
}

/** The rules a continue is held to: ownership, expiry, one continue per answer, the fingerprint, the bounds. */
function ruleTests(conversations: () => Conversations) {
  test('thread_not_found for another key, an unknown id, and an expired thread; 404', async () => {
    const c = conversations()
    const key = newKey()
    await served(await c.beginThread(ask({ thread: { type: 'create' } }), key), 'msg_nf')
    const notFound = { type: 'not_found_error', code: 'thread_not_found' }
    expect(await failure(c.beginThread(continueFrom('msg_nf'), newKey()))).toEqual(notFound)
    expect(await failure(c.beginThread(continueFrom('msg_unknown'), key))).toEqual(notFound)
    clock.now += DAY_MS + 3_600_000
    expect(await failure(c.beginThread(continueFrom('msg_nf'), key))).toEqual(notFound)
    clock.now = T0
  })

  test('a turn is continued once: a second continue is thread_already_continued, a concurrent one thread_continue_in_flight', async () => {
    const c = conversations()
    const key = newKey()
    await served(await c.beginThread(ask({ thread: { type: 'create' } }), key), 'msg_once')
    const [first, second] = await Promise.allSettled([c.beginThread(continueFrom('msg_once'), key), c.beginThread(continueFrom('msg_once'), key)])
    const won = [first, second].filter((r) => r.status === 'fulfilled')
    const lost = [first, second].filter((r) => r.status === 'rejected') as PromiseRejectedResult[]
    expect(won.length).toBe(1)
    expect(lost.map((r) => (r.reason as GatewayError).code)).toEqual(['thread_continue_in_flight'])
    // A turn that failed gives the thread back: the caller may try the same continue again.
    await (won[0] as PromiseFulfilledResult<ThreadTurn>).value.release()
    const retry = await c.beginThread(continueFrom('msg_once'), key)
    await served(retry, 'msg_once_2')
    await retry!.release()
    expect(await failure(c.beginThread(continueFrom('msg_once'), key))).toEqual({ type: 'invalid_request_error', code: 'thread_already_continued' })
  })

  test('a continue may repeat system and tools unchanged, in any key order; a changed one is thread_fingerprint_mismatch', async () => {
    const c = conversations()
    const key = newKey()
    await served(await c.beginThread(ask({ thread: { type: 'create' }, system: SYSTEM, tools: TOOLS }), key), 'msg_fp')
    const reordered = TOOLS.map(({ input_schema, description, name }) => ({ input_schema, name, description }))
    const mismatch = await c.beginThread(continueFrom('msg_fp', { system: 'Another system prompt', tools: reordered }), key).catch((e: GatewayError) => e)
    expect(mismatch).toMatchObject({ type: 'invalid_request_error', code: 'thread_fingerprint_mismatch', param: 'system' })
    const same = await c.beginThread(continueFrom('msg_fp', { system: SYSTEM, tools: reordered }), key)
    expect(same!.requestFor(false).request.tools).toEqual(TOOLS)
    await same!.release()
  })

  test('a turn too large to keep is not recorded, and its thread can be continued again', async () => {
    const c = conversations()
    const key = newKey()
    await served(await c.beginThread(ask({ thread: { type: 'create' } }), key), 'msg_big')
    const next = await c.beginThread(continueFrom('msg_big'), key)
    expect(await next!.record(answer('msg_big_2', 'z'.repeat(MAX_RECORD_BYTES)), 'openai', false)).toBe(false)
    expect(await failure(c.beginThread(continueFrom('msg_big_2'), key))).toEqual({ type: 'not_found_error', code: 'thread_not_found' })
    const again = await c.beginThread(continueFrom('msg_big'), key)
    expect(again).not.toBeNull()
    await again!.release()
  })
}

/** Anthropic targets: the upstream holds the threads it was sent; the gateway routes continues to it. */
function anthropicTargetTests(conversations: () => Conversations) {
  test('Anthropic targets: sent as is, and a continue goes only to the upstream that holds the thread', async () => {
    const c = conversations()
    const key = newKey()
    const create = ask({ thread: { type: 'create' } })
    const turn = await c.beginThread(create, key)
    expect(turn!.requestFor(true)).toEqual({ request: create, asSent: true })
    expect(await turn!.record(answer('msg_01Anthropic'), 'anthropic-eu', true)).toBe(true)
    expect(await c.holderOf('msg_01Anthropic', key)).toBe('anthropic-eu')
    expect(await c.holderOf('msg_01Anthropic', newKey())).toBeNull()

    const next = await c.beginThread(continueFrom('msg_01Anthropic'), key)
    expect(next!.heldBy).toBe('anthropic-eu')
    expect([next!.serves('anthropic-eu', true), next!.serves('anthropic-us', true), next!.serves('openai', false)]).toEqual([true, false, false])
    expect(next!.requestFor(true)).toEqual({ request: continueFrom('msg_01Anthropic'), asSent: true })
    expect(next!.notServable()).toMatchObject({ type: 'not_found_error', code: 'thread_not_found' })
    await next!.record(answer('msg_02Anthropic'), 'anthropic-eu', true)
    expect(await c.holderOf('msg_02Anthropic', key)).toBe('anthropic-eu')
    // Another key cannot reach the upstream's thread through the gateway's own credentials.
    expect(await failure(c.beginThread(continueFrom('msg_02Anthropic'), newKey()))).toEqual({ type: 'not_found_error', code: 'thread_not_found' })
  })

  test('a thread the gateway holds, served by an Anthropic target: the full history without thread, and the gateway keeps holding it', async () => {
    const c = conversations()
    const key = newKey()
    await served(await c.beginThread(ask({ thread: { type: 'create' } }), key), 'msg_local')
    const next = await c.beginThread(continueFrom('msg_local'), key)
    const { request, asSent } = next!.requestFor(true)
    expect(asSent).toBe(false)
    expect(request.thread).toBeUndefined()
    expect(request.messages.length).toBe(3)
    expect(await next!.record(answer('msg_01FromAnthropic'), 'anthropic', true)).toBe(true)
    expect(await c.holderOf('msg_01FromAnthropic', key)).toBeNull()
    const third = await c.beginThread(continueFrom('msg_01FromAnthropic'), key)
    expect(third!.serves('openai', false)).toBe(true)
    expect(third!.requestFor(false).request.messages.length).toBe(5)
    await third!.release()
  })
}

describe('message threads over the SQLite store', () => {
  let stores: Stores
  setupEach(() => {
    stores = openSqliteStores(':memory:')
  })
  teardownEach(() => stores.close())
  threadTests(() => stores)
})

describeWithServers('message threads over the Postgres store', ['postgres'], () => {
  let stores: Stores
  setup(async () => {
    const server = await sharedPostgres()
    stores = await openPostgresStores(await server.createDatabase(), { applicationName: 'threads test', poolSize: 4 })
  })
  teardown(async () => {
    await stores?.close()
  })
  threadTests(() => stores)
})

describe('a streamed answer put back together', () => {
  const events: StreamEvent[] = [
    {
      type: 'message_start',
      message: {
        id: 'msg_s',
        type: 'message',
        role: 'assistant',
        model: 'm',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 0 },
      },
    },
    { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me ' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'look.' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'cg1.sig' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Looking ' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'it up.' } },
    { type: 'content_block_stop', index: 1 },
    { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} } },
    { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"q": "ba' } },
    { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: 'nana"}' } },
    { type: 'content_block_stop', index: 2 },
    { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 9 } },
    { type: 'message_stop' },
  ]

  test('text, thinking with its signature, and a tool call with its parsed input', () => {
    const assembler = new AnswerAssembler()
    for (const event of events) assembler.push(event)
    expect(assembler.answer()).toEqual({
      id: 'msg_s',
      content: [
        { type: 'thinking', thinking: 'Let me look.', signature: 'cg1.sig' },
        { type: 'text', text: 'Looking it up.' },
        { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'banana' } },
      ],
    })
  })

  test('a stream that broke before its stop reason is no answer', () => {
    const assembler = new AnswerAssembler()
    for (const event of events.slice(0, 12)) assembler.push(event)
    expect(assembler.answer()).toBeNull()
  })
})

/**
 * `@anthropic-ai/sdk` (pinned in package.json) against a gateway process, through an alias on a fake
 * Anthropic upstream and one on a fake OpenAI-compatible upstream (test/support/fakes): what the
 * SDK sends must be served on both, as the contract's "Everything the Anthropic side sends" says.
 * The clients are built exactly as docs/clients/anthropic-sdk.md shows (the gateway's root as
 * `baseURL`, the key as `apiKey`), and the page's examples are run as written.
 */
import Anthropic from '@anthropic-ai/sdk'
import { betaZodTool } from '@anthropic-ai/sdk/helpers/beta/zod'
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod'
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { z } from 'zod'
import { ANTHROPIC_MARKER, fakeAnthropic, type FakeAnthropic, THREADS_BETA } from '../support/fakes/anthropic'
import { sampleOf } from '../support/fakes/common'
import { OPENAI_MARKER } from '../support/fakes/openai'
import { setup, teardown, TEST_MS } from '../support/hooks'
import {
  ALIASES,
  type ClientsGateway,
  describeCalls,
  describeExchanges,
  docBlock,
  type Exchange,
  docPage,
  explained,
  FAKE_ANTHROPIC_KEY,
  MESSAGES_TARGETS,
  NO_RESPONSES_REQUESTS,
  recordingFetch,
  runSnippet,
  startClientsGateway,
  toolInputEverywhere,
  toolLoopAnswer,
} from './harness'
import { clientMatrix, matrixCheck } from './matrix'

setDefaultTimeout(TEST_MS)

const PAGE = docPage('anthropic-sdk.md')
const WEATHER_INPUT = { city: 'Paris' }
const toolInput = (name: string) => (name === 'get_weather' ? WEATHER_INPUT : {})

const Weather = z.object({ city: z.string(), temperature_c: z.number(), conditions: z.enum(['sunny', 'cloudy', 'rain']) })
const WEATHER_TOOL: Anthropic.Tool = {
  name: 'get_weather',
  description: 'The current weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}

/** Anthropic's overloaded answer (https://docs.anthropic.com/en/api/errors): the gateway fails over on it. */
const overloaded = () => Response.json({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, { status: 529 })

const matrix = clientMatrix({
  id: 'anthropic-sdk',
  order: 60,
  name: '@anthropic-ai/sdk 1.14.0 (`client.messages`)',
  page: 'clients/anthropic-sdk.md',
  test: 'test/clients/anthropic-sdk.test.ts',
  rows: [
    { id: 'create', label: '`messages.create`' },
    { id: 'stream', label: '`messages.stream(...).finalMessage()`' },
    { id: 'tool-loop', label: 'a tool loop with adaptive thinking, streamed: the call, the `tool_result`, the final text' },
    { id: 'parse', label: '`messages.parse` with `zodOutputFormat`' },
  ],
  notApplicable: [NO_RESPONSES_REQUESTS],
})

/** The mock calls a tool when a user text says so, and repeats the prompt otherwise. */
const MOCK_TOOL_PROMPT = '[[tool:get_weather {"city":"Paris"}]] chatgate-mock-final'

describe('@anthropic-ai/sdk 1.14.0 through the gateway', () => {
  let cg: ClientsGateway
  /** A second Anthropic upstream, first in `anthropic/pair`, that cannot start threads: the gateway fails over from it. */
  let busy: FakeAnthropic

  setup(async () => {
    busy = fakeAnthropic({
      apiKey: FAKE_ANTHROPIC_KEY,
      name: 'busy',
      toolInput,
      refuse: (call) => (call.body?.thread?.type === 'continue' ? null : overloaded()),
    })
    cg = await startClientsGateway({
      ...toolInputEverywhere(toolInput),
      // Claude on Vertex AI gets structured output as one forced tool, whose input a model fills with the schema's object.
      vertexClaude: {
        toolInput: (name) =>
          name === 'get_weather' ? WEATHER_INPUT : (sampleOf(zodOutputFormat(Weather).schema as Record<string, unknown>) as Record<string, unknown>),
      },
      others: [busy],
      extraToml: () => `
[upstreams.claude_busy]
kind = "anthropic"
base_url = "${busy.url}"
api_key_env = "FAKE_ANTHROPIC_KEY"
max_retries = 0
failure_threshold = 1000

[aliases."anthropic/pair"]
targets = [{ upstream = "claude_busy", model = "claude-sonnet-4-5" }, { upstream = "claude", model = "claude-sonnet-4-5" }]
`,
    })
  })
  teardown(async () => {
    await cg.stop()
  })

  /** A client as the docs page builds it, recording what it sends and what it gets. */
  const client = () => {
    const recorder = recordingFetch()
    return { client: new Anthropic({ baseURL: cg.url, apiKey: cg.key, fetch: recorder.fetch, maxRetries: 0 }), exchanges: recorder.exchanges }
  }

  const kinds = [
    { kind: 'Anthropic', alias: ALIASES.anthropic, marker: ANTHROPIC_MARKER },
    { kind: 'OpenAI-compatible', alias: ALIASES.openai, marker: OPENAI_MARKER },
  ] as const

  const textOf = (message: { content: { type: string }[] }) =>
    message.content
      .filter((b): b is Anthropic.TextBlock => b.type === 'text')
      .map((b) => b.text)
      .join('')

  for (const { kind, alias, marker } of kinds) {
    describe(`through an ${kind} alias (${alias})`, () => {
      test('system-role messages in `messages` are served, each kept at its place', async () => {
        const { client: sdk } = client()
        const messages: Anthropic.MessageParam[] = [
          { role: 'user', content: 'Hello' },
          { role: 'assistant', content: 'Hi.' },
          { role: 'system', content: 'From now on, answer in French.' },
          { role: 'user', content: 'How are you?' },
        ]
        const message = await sdk.messages.create({ model: alias, max_tokens: 1024, system: 'You are terse.', messages })
        expect(textOf(message)).toContain(marker)
        if (alias === ALIASES.anthropic) {
          const sent = cg.anthropic.messageCalls().at(-1)!.body
          expect(sent.messages).toEqual(messages)
          expect(sent.system).toBe('You are terse.')
        } else {
          const sent = cg.openai.chatCalls().at(-1)!.body
          expect(sent.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user', 'assistant', 'system', 'user'])
          expect(JSON.stringify(sent.messages[3].content)).toContain('From now on, answer in French.')
          expect(message.id).toStartWith('msg_')
        }
      })

      test('messages.parse with a zod output format: parsed_output is the JSON the upstream answered', async () => {
        const { client: sdk } = client()
        const format = zodOutputFormat(Weather)
        const message = await sdk.messages.parse({
          model: alias,
          max_tokens: 1024,
          messages: [{ role: 'user', content: 'The weather in Paris, as JSON.' }],
          output_config: { format },
        })
        expect(message.parsed_output).toEqual(Weather.parse(sampleOf(format.schema as Record<string, unknown>)))
        if (alias === ALIASES.anthropic) {
          expect(cg.anthropic.messageCalls().at(-1)!.body.output_config.format).toEqual({ type: 'json_schema', schema: format.schema })
        } else {
          const sent = cg.openai.chatCalls().at(-1)!.body
          expect(sent.response_format).toMatchObject({ type: 'json_schema', json_schema: { schema: format.schema, strict: true } })
          expect(typeof sent.response_format.json_schema.name).toBe('string')
        }
      })

      test('messages.stream with a zod output format: the final message is parsed', async () => {
        const { client: sdk } = client()
        const format = zodOutputFormat(Weather)
        const stream = sdk.messages.stream({
          model: alias,
          max_tokens: 1024,
          messages: [{ role: 'user', content: 'The weather in Paris, as JSON.' }],
          output_config: { format },
        })
        const message = await stream.finalMessage()
        expect(message.parsed_output).toEqual(Weather.parse(sampleOf(format.schema as Record<string, unknown>)))
      })

      for (const mode of ['json', 'stream'] as const) {
        for (const thinking of [{ type: 'enabled', budget_tokens: 2048 }, { type: 'adaptive' }] as const satisfies Anthropic.ThinkingConfigParam[]) {
          test(`${thinking.type} thinking in a tool loop (${mode}): the signed thinking goes back with the call and the loop completes`, async () => {
            const { client: sdk, exchanges } = client()
            const request = { model: alias, max_tokens: 4096, thinking, tools: [WEATHER_TOOL] }
            const send = (messages: Anthropic.MessageParam[]) =>
              mode === 'json' ? sdk.messages.create({ ...request, messages }) : sdk.messages.stream({ ...request, messages }).finalMessage()

            const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }]
            const first = await send(messages)
            expect(first.stop_reason).toBe('tool_use')
            const thought = first.content.find((b): b is Anthropic.ThinkingBlock => b.type === 'thinking')
            const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!
            expect(call.input).toEqual(WEATHER_INPUT)
            if (thought === undefined) throw new Error(`no thinking block in the answer: ${JSON.stringify(first.content)}`)
            if (alias === ALIASES.openai) {
              // The upstream's reasoning, as thinking the gateway signed.
              expect(thought.thinking).toBe(cg.openai.reasonings.at(-1)!)
              expect(thought.signature).toStartWith('cg1.')
              expect(cg.openai.chatCalls().at(-1)!.body.reasoning_effort).toBe('medium')
              expect(first.id).toStartWith('msg_')
            } else {
              expect(thought.signature).toStartWith('fakesig_a_')
            }

            messages.push({ role: 'assistant', content: first.content })
            messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '18 degrees and sunny' }] })
            const second = await send(messages)
            expect(textOf(second)).toContain(`${marker} (the tool said: 18 degrees and sunny)`)
            if (alias === ALIASES.openai) {
              // The round trip: the signed thinking became the upstream's reasoning_content again (the fake requires it, as DeepSeek does).
              const assistant = cg.openai
                .chatCalls()
                .at(-1)!
                .body.messages.find((m: { role: string }) => m.role === 'assistant')
              expect(assistant.reasoning_content).toBe(thought.thinking)
            } else {
              const assistant = cg.anthropic
                .messageCalls()
                .at(-1)!
                .body.messages.find((m: { role: string }) => m.role === 'assistant')
              expect(assistant.content[0]).toEqual({ type: 'thinking', thinking: thought.thinking, signature: thought.signature })
            }
            expect(exchanges.every((e) => e.status === 200)).toBe(true)
          })
        }
      }
    })
  }

  test('the tool runner on a thread, through an OpenAI-compatible alias: the gateway holds the thread and sends the upstream the whole history', async () => {
    const { client: sdk, exchanges } = client()
    const ran: unknown[] = []
    const getWeather = betaZodTool({
      name: 'get_weather',
      description: 'The current weather in a city',
      inputSchema: z.object({ city: z.string() }),
      run: async (input) => {
        ran.push(input)
        return `18 degrees and sunny in ${input.city}`
      },
    })
    const before = cg.openai.chatCalls().length
    const context = () => `the SDK sent:\n${describeExchanges(exchanges)}\nthe upstream got:\n${describeCalls(cg.openai.chatCalls().slice(before))}`
    const final = await explained(
      async () =>
        await sdk.beta.messages.toolRunner({
          model: ALIASES.openai,
          max_tokens: 1024,
          messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
          tools: [getWeather],
        }),
      context,
    )
    const sent = exchanges.map((e) => ({ status: e.status, thread: e.body?.thread, roles: e.body?.messages?.map((m: { role: string }) => m.role) }))
    // Two turns on one thread: create, then continue with only the tool result; no replay, no fallback to unthreaded.
    expect(sent).toEqual([
      { status: 200, thread: { type: 'create' }, roles: ['user'] },
      { status: 200, thread: { type: 'continue', previous_message_id: expect.stringMatching(/^msg_/) }, roles: ['user'] },
    ])
    expect(exchanges[0]!.headers.get('anthropic-beta')).toContain(THREADS_BETA)
    expect(ran).toEqual([WEATHER_INPUT])
    expect(textOf(final)).toContain(`${OPENAI_MARKER} (the tool said: 18 degrees and sunny in Paris)`)
    const upstream = cg.openai.chatCalls().slice(before)
    expect(upstream.map((call) => call.body.messages.map((m: { role: string }) => m.role))).toEqual([['user'], ['user', 'assistant', 'tool']])
    expect(upstream[1]!.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['get_weather'])
  })

  test('the tool runner on a thread, streamed, through an OpenAI-compatible alias', async () => {
    const { client: sdk, exchanges } = client()
    const getWeather = betaZodTool({
      name: 'get_weather',
      description: 'The current weather in a city',
      inputSchema: z.object({ city: z.string() }),
      run: async ({ city }) => `18 degrees and sunny in ${city}`,
    })
    const runner = sdk.beta.messages.toolRunner({
      model: ALIASES.openai,
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [getWeather],
      stream: true,
    })
    const before = cg.openai.chatCalls().length
    const final = await explained(
      async () => {
        for await (const stream of runner) await stream.finalMessage()
        return await runner.done()
      },
      () => `the SDK sent:\n${describeExchanges(exchanges)}\nthe upstream got:\n${describeCalls(cg.openai.chatCalls().slice(before))}`,
    )
    expect(textOf(final)).toContain(`${OPENAI_MARKER} (the tool said: 18 degrees and sunny in Paris)`)
    expect(exchanges.map((e) => [e.status, e.body?.thread?.type])).toEqual([
      [200, 'create'],
      [200, 'continue'],
    ])
  })

  test('the tool runner on a thread, through an Anthropic alias: the thread is passed on and the continue goes to the upstream that holds it', async () => {
    const { client: sdk, exchanges } = client()
    const getWeather = betaZodTool({
      name: 'get_weather',
      description: 'The current weather in a city',
      inputSchema: z.object({ city: z.string() }),
      run: async ({ city }) => `18 degrees and sunny in ${city}`,
    })
    const holder = cg.anthropic.messageCalls().length
    const other = busy.messageCalls().length
    const context = () =>
      `the SDK sent:\n${describeExchanges(exchanges)}\nthe thread's holder got:\n${describeCalls(cg.anthropic.messageCalls().slice(holder))}\nthe other upstream got:\n${describeCalls(busy.messageCalls().slice(other))}`
    const final = await explained(
      async () =>
        await sdk.beta.messages.toolRunner({
          model: 'anthropic/pair',
          max_tokens: 1024,
          system: 'You are terse.',
          messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
          tools: [getWeather],
        }),
      context,
    )
    expect(textOf(final)).toContain(`${ANTHROPIC_MARKER} (the tool said: 18 degrees and sunny in Paris)`)
    // The SDK saw one thread: create, then continue from the holder's own answer (no thread_not_found, no replay).
    expect(exchanges.map((e) => [e.status, e.body?.thread?.type])).toEqual([
      [200, 'create'],
      [200, 'continue'],
    ])
    const atHolder = cg.anthropic.messageCalls().slice(holder)
    expect(atHolder.map((call) => call.body.thread)).toEqual([{ type: 'create' }, { type: 'continue', previous_message_id: cg.anthropic.answered.at(-2)! }])
    // The continue as the SDK sent it: only the new message, no system or tools (the thread holds them).
    expect(atHolder[1]!.body.system).toBeUndefined()
    expect(atHolder[1]!.body.tools).toBeUndefined()
    expect(atHolder[1]!.headers.get('anthropic-beta')).toContain(THREADS_BETA)
    // The other upstream was tried for the create (and failed over from), never for the continue.
    expect(
      busy
        .messageCalls()
        .slice(other)
        .map((call) => call.body.thread?.type),
    ).toEqual(['create'])
  })

  for (const alias of [ALIASES.anthropic, ALIASES.openai]) {
    test(`a continue from an id no thread holds (${alias}): 404 with error_code thread_not_found, so the SDK can replay the history`, async () => {
      const { client: sdk, exchanges } = client()
      const error = await sdk.beta.messages
        .create({
          model: alias,
          max_tokens: 256,
          betas: [THREADS_BETA],
          thread: { type: 'continue', previous_message_id: 'msg_no_thread_holds_this' },
          messages: [{ role: 'user', content: 'Hello' }],
        })
        .then(
          () => null,
          (e: unknown) => e,
        )
      // The SDK's ThreadState replays under a new thread only on this error_code (error.details.error_code).
      if (!(error instanceof Anthropic.APIError) || error.status !== 404 || error.errorCode !== 'thread_not_found') {
        throw new Error(`expected a 404 with error_code thread_not_found, got:\n${describeExchanges(exchanges)}`)
      }
    })
  }

  test("the key as authToken (Authorization: Bearer) works too; a wrong key is the SDK's AuthenticationError", async () => {
    const bearer = new Anthropic({ baseURL: cg.url, authToken: cg.key, apiKey: null, maxRetries: 0 })
    const message = await bearer.messages.create({ model: ALIASES.mock, max_tokens: 64, messages: [{ role: 'user', content: 'hello bearer' }] })
    expect(textOf(message)).toContain('hello bearer')
    const wrong = new Anthropic({ baseURL: cg.url, apiKey: 'sk-cg-wrong', maxRetries: 0 })
    const error = await wrong.messages.create({ model: ALIASES.mock, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }).then(
      () => null,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError)
  })

  test('the tool runner without a thread (thread: false) sends the full history every turn', async () => {
    const { client: sdk, exchanges } = client()
    const getWeather = betaZodTool({
      name: 'get_weather',
      description: 'The current weather in a city',
      inputSchema: z.object({ city: z.string() }),
      run: async ({ city }) => `18 degrees and sunny in ${city}`,
    })
    const final = await sdk.beta.messages.toolRunner({
      model: ALIASES.openai,
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [getWeather],
      thread: false,
    })
    expect(textOf(final)).toContain(`${OPENAI_MARKER} (the tool said: 18 degrees and sunny in Paris)`)
    expect(exchanges.map((e) => [e.status, e.body?.thread, e.body?.messages.length])).toEqual([
      [200, undefined, 1],
      [200, undefined, 3],
    ])
  })

  describe('cache_control, at the top level and on blocks, is one hint', () => {
    type Body = { messages: Anthropic.MessageParam[]; system?: Anthropic.TextBlockParam[]; cache_control?: Anthropic.CacheControlEphemeral }
    const hint: Anthropic.CacheControlEphemeral = { type: 'ephemeral' }
    const cached: Body = {
      cache_control: hint,
      system: [{ type: 'text', text: 'A long, reused system prompt.', cache_control: hint }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello', cache_control: hint }] }],
    }
    const topOnly: Body = { cache_control: hint, messages: [{ role: 'user', content: 'Hello' }] }
    const blocksOnly: Body = { system: cached.system!, messages: cached.messages }

    test('an Anthropic alias gets it as sent, and nothing is named dropped', async () => {
      const { client: sdk } = client()
      const { data, response } = await sdk.messages.create({ model: ALIASES.anthropic, max_tokens: 256, ...cached }).withResponse()
      expect(textOf(data)).toContain(ANTHROPIC_MARKER)
      const sent = cg.anthropic.messageCalls().at(-1)!.body
      expect(sent.cache_control).toEqual({ type: 'ephemeral' })
      expect(sent.system).toEqual(cached.system)
      expect(sent.messages).toEqual(cached.messages)
      expect(response.headers.get('x-svc-dropped') ?? '').not.toContain('cache_control')
    })

    for (const [what, body] of [
      ['top-level only', topOnly],
      ['blocks only', blocksOnly],
      ['both', cached],
    ] as const) {
      test(`an OpenAI-compatible alias (${what}): removed everywhere, and the answer says x-svc-dropped: cache_control`, async () => {
        const { client: sdk } = client()
        const { data, response } = await sdk.messages.create({ model: ALIASES.openai, max_tokens: 256, ...body }).withResponse()
        expect(textOf(data)).toContain(OPENAI_MARKER)
        expect(cg.openai.chatCalls().at(-1)!.text).not.toContain('cache_control')
        expect((response.headers.get('x-svc-dropped') ?? '').split(',').map((s) => s.trim())).toContain('cache_control')
      })
    }

    test('an OpenAI-compatible alias, streamed: the stream answer names it too', async () => {
      const { client: sdk } = client()
      const { data: stream, response } = await sdk.messages.create({ model: ALIASES.openai, max_tokens: 256, stream: true, ...cached }).withResponse()
      let text = ''
      for await (const event of stream) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text
      expect(text).toContain(OPENAI_MARKER)
      expect((response.headers.get('x-svc-dropped') ?? '').split(',').map((s) => s.trim())).toContain('cache_control')
    })
  })

  test('thinking the gateway signed is not sent to an Anthropic upstream (which would refuse the signature)', async () => {
    const { client: sdk } = client()
    const thinking: Anthropic.ThinkingConfigParam = { type: 'enabled', budget_tokens: 2048 }
    const request = { max_tokens: 4096, thinking, tools: [WEATHER_TOOL] }
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }]
    const first = await sdk.messages.create({ ...request, model: ALIASES.openai, messages })
    const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!
    messages.push({ role: 'assistant', content: first.content })
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '18 degrees and sunny' }] })
    const second = await sdk.messages.create({ ...request, model: ALIASES.anthropic, messages })
    expect(textOf(second)).toContain(ANTHROPIC_MARKER)
    expect(cg.anthropic.messageCalls().at(-1)!.text).not.toContain('cg1.')
  })

  test('a translated stream: message_start estimates the input, the final usage is the upstream’s exact count', async () => {
    const { client: sdk } = client()
    let started: Anthropic.Usage | null = null
    const stream = sdk.messages.stream({ model: ALIASES.openai, max_tokens: 256, messages: [{ role: 'user', content: 'Say hello, at some length please.' }] })
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_start') started = event.message.usage
    })
    const message = await stream.finalMessage()
    const exact = cg.openai.completions.at(-1)!.usage
    expect(started!.input_tokens).toBeGreaterThan(0)
    expect(message.usage.input_tokens).toBe(exact.prompt_tokens)
    expect(message.usage.output_tokens).toBe(exact.completion_tokens)
    expect(message.id).toStartWith('msg_')
  })

  describe('through every kind of upstream (the compatibility matrix)', () => {
    for (const { kind, alias, marker } of MESSAGES_TARGETS) {
      const context = (exchanges: Exchange[]) => () =>
        `the SDK sent:\n${describeExchanges(exchanges)}\n--- gateway log (tail)\n${cg.gateway.output().slice(-3000)}`
      test(
        `${kind} (${alias}): messages.create`,
        matrix.cell('create', kind, async () => {
          const { client: sdk, exchanges } = client()
          const message = await explained(
            () => sdk.messages.create({ model: alias, max_tokens: 1024, messages: [{ role: 'user', content: 'Say hello' }] }),
            context(exchanges),
          )
          expect(textOf(message)).toContain(marker ?? 'Say hello')
        }),
      )
      test(
        `${kind} (${alias}): messages.stream`,
        matrix.cell('stream', kind, async () => {
          const { client: sdk, exchanges } = client()
          const message = await explained(
            () => sdk.messages.stream({ model: alias, max_tokens: 1024, messages: [{ role: 'user', content: 'Stream hello' }] }).finalMessage(),
            context(exchanges),
          )
          expect(textOf(message)).toContain(marker ?? 'Stream hello')
        }),
      )
      test(
        `${kind} (${alias}): a tool loop with adaptive thinking, streamed`,
        matrix.cell('tool-loop', kind, async () => {
          const { client: sdk, exchanges } = client()
          const request = { model: alias, max_tokens: 4096, thinking: { type: 'adaptive' } as const, tools: [WEATHER_TOOL] }
          const messages: Anthropic.MessageParam[] = [{ role: 'user', content: marker ? 'What is the weather in Paris?' : MOCK_TOOL_PROMPT }]
          const first = await explained(() => sdk.messages.stream({ ...request, messages }).finalMessage(), context(exchanges))
          const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')
          if (!call) throw new Error(`no tool call in the answer: ${JSON.stringify(first.content)}`)
          expect(call.input).toEqual(WEATHER_INPUT)
          messages.push({ role: 'assistant', content: first.content })
          messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '18 degrees and sunny' }] })
          const second = await explained(() => sdk.messages.stream({ ...request, messages }).finalMessage(), context(exchanges))
          expect(textOf(second)).toContain(marker ? toolLoopAnswer(marker, '18 degrees and sunny') : 'chatgate-mock-final')
        }),
      )
      test(
        `${kind} (${alias}): messages.parse with a zod output format`,
        matrix.cell('parse', kind, async () => {
          const { client: sdk, exchanges } = client()
          const format = zodOutputFormat(Weather)
          const expected = Weather.parse(sampleOf(format.schema as Record<string, unknown>))
          const content = marker ? 'The weather in Paris, as JSON.' : JSON.stringify(expected)
          const message = await explained(
            () => sdk.messages.parse({ model: alias, max_tokens: 1024, messages: [{ role: 'user', content }], output_config: { format } }),
            context(exchanges),
          )
          expect(message.parsed_output).toEqual(expected)
        }),
      )
    }
  })

  describe("the docs page's examples, run as written", () => {
    for (const tag of ['basic', 'parse', 'tool-runner', 'caching', 'thinking']) {
      test(tag, async () => {
        const run = await runSnippet(docBlock(PAGE, 'ts', tag), cg.url, cg.key)
        if (run.code !== 0 || !run.stdout.trim()) throw new Error(`the ${tag} example failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`)
        if (tag === 'parse') expect(run.stdout).toContain('sample city')
        else if (tag === 'caching') expect(run.stdout).toContain('cache_control')
        else expect(run.stdout).toContain(OPENAI_MARKER)
      })
    }
  })

  matrixCheck()
})

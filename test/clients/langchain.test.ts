/**
 * LangChain's `ChatAnthropic` (`@langchain/anthropic`, `@langchain/core`, pinned in package.json)
 * against a gateway process, through an alias on a fake Anthropic upstream and one on a fake
 * OpenAI-compatible upstream (test/support/fakes): a mid-conversation SystemMessage, and
 * `withStructuredOutput(schema, {method: "jsonSchema"})`. The model is built exactly as
 * docs/clients/langchain.md shows, and the page's examples are run as written.
 */
import { ChatAnthropic } from '@langchain/anthropic'
import { AIMessage, type BaseMessage, HumanMessage, SystemMessage, type ToolMessage } from '@langchain/core/messages'
import { tool } from '@langchain/core/tools'
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { z } from 'zod'
import { ANTHROPIC_MARKER } from '../support/fakes/anthropic'
import { OPENAI_MARKER } from '../support/fakes/openai'
import { setup, teardown, TEST_MS } from '../support/hooks'
import {
  ALIASES,
  type ClientsGateway,
  describeCalls,
  docBlock,
  docPage,
  explained,
  MESSAGES_TARGETS,
  NO_RESPONSES_REQUESTS,
  plainAnswer,
  runSnippet,
  startClientsGateway,
  toolInputEverywhere,
  toolLoopAnswer,
  WEATHER,
} from './harness'
import { clientMatrix, matrixCheck } from './matrix'

setDefaultTimeout(TEST_MS)

const PAGE = docPage('langchain.md')
const Weather = z.object({ city: z.string(), temperature_c: z.number(), conditions: z.string().describe('sunny, cloudy or rain') })
/** What every fake answers for Weather's schema (and the mock repeats, given as the prompt). */
const SAMPLE = { city: 'sample city', temperature_c: 7, conditions: 'sample conditions' }

const matrix = clientMatrix({
  id: 'langchain-anthropic',
  order: 45,
  name: 'LangChain `ChatAnthropic` (@langchain/anthropic 1.5.11)',
  page: 'clients/langchain.md',
  test: 'test/clients/langchain.test.ts',
  rows: [
    { id: 'invoke', label: '`invoke`' },
    { id: 'stream', label: '`stream`' },
    { id: 'tools', label: '`bindTools`: the call, a `ToolMessage` with the result, the final answer' },
    { id: 'structured', label: "`withStructuredOutput(zod, {method: 'jsonSchema'})`" },
  ],
  notApplicable: [NO_RESPONSES_REQUESTS],
})

describe('LangChain ChatAnthropic (@langchain/anthropic 1.5.11) through the gateway', () => {
  let cg: ClientsGateway
  setup(async () => {
    cg = await startClientsGateway({
      ...toolInputEverywhere(WEATHER.toolInput),
      // Claude on Vertex AI gets structured output as one forced tool, whose input a model fills with the schema's object.
      vertexClaude: { toolInput: (name) => (name === 'get_weather' ? { city: WEATHER.city } : SAMPLE) },
    })
  })
  teardown(async () => {
    await cg.stop()
  })

  /** The model as the docs page builds it. */
  const chat = (model: string) => new ChatAnthropic({ model, anthropicApiUrl: cg.url, apiKey: cg.key, maxTokens: 1024, maxRetries: 0 })

  const upstreamCalls = (alias: string) => (alias === ALIASES.anthropic ? cg.anthropic.messageCalls() : cg.openai.chatCalls())

  for (const { kind, alias, marker } of [
    { kind: 'Anthropic', alias: ALIASES.anthropic, marker: ANTHROPIC_MARKER },
    { kind: 'OpenAI-compatible', alias: ALIASES.openai, marker: OPENAI_MARKER },
  ] as const) {
    describe(`through an ${kind} alias (${alias})`, () => {
      test('a SystemMessage mid-conversation is served and kept at its place', async () => {
        const before = upstreamCalls(alias).length
        const answer = await explained(
          () =>
            chat(alias).invoke([
              new SystemMessage('You are terse.'),
              new HumanMessage('Hello'),
              new AIMessage('Hi.'),
              new SystemMessage('From now on, answer in French.'),
              new HumanMessage('How are you?'),
            ]),
          () => `the upstream got:\n${describeCalls(upstreamCalls(alias).slice(before))}\n--- gateway log (tail)\n${cg.gateway.output().slice(-3000)}`,
        )
        expect(String(answer.content)).toContain(marker)
        const sent = upstreamCalls(alias).at(-1)!.body
        if (alias === ALIASES.anthropic) {
          expect(sent.system).toBe('You are terse.')
          expect(sent.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'system', 'user'])
        } else {
          expect(sent.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user', 'assistant', 'system', 'user'])
        }
        const mid = sent.messages.find((m: { role: string; content: unknown }, i: number) => i > 0 && m.role === 'system')
        expect(JSON.stringify(mid.content)).toContain('From now on, answer in French.')
      })

      test('withStructuredOutput(schema, {method: "jsonSchema"}) returns the parsed object', async () => {
        const before = upstreamCalls(alias).length
        const result = await explained(
          () => chat(alias).withStructuredOutput(Weather, { method: 'jsonSchema' }).invoke('The weather in Paris, as JSON.'),
          () => `the upstream got:\n${describeCalls(upstreamCalls(alias).slice(before))}\n--- gateway log (tail)\n${cg.gateway.output().slice(-3000)}`,
        )
        expect(result).toEqual({ city: 'sample city', temperature_c: 7, conditions: 'sample conditions' })
        const sent = upstreamCalls(alias).at(-1)!.body
        if (alias === ALIASES.anthropic) expect(sent.output_config.format.type).toBe('json_schema')
        else expect(sent.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } })
      })
    })
  }

  describe('through every kind of upstream (the compatibility matrix)', () => {
    const getWeather = tool(async ({ city }: { city: string }) => (city === WEATHER.city ? WEATHER.answer : `no weather for ${city}`), {
      name: 'get_weather',
      description: 'The current weather in a city',
      schema: z.object({ city: z.string() }),
    })
    const context = () => `--- gateway log (tail)\n${cg.gateway.output().slice(-3000)}`

    for (const { kind, alias, marker } of MESSAGES_TARGETS) {
      test(
        `${kind} (${alias}): invoke`,
        matrix.cell('invoke', kind, async () => {
          const answer = await explained(() => chat(alias).invoke('Say hello'), context)
          expect(answer.text).toContain(marker ? plainAnswer(marker, 'Say hello') : 'Say hello')
        }),
      )
      test(
        `${kind} (${alias}): stream`,
        matrix.cell('stream', kind, async () => {
          const text = await explained(async () => {
            let streamed = ''
            for await (const chunk of await chat(alias).stream([new HumanMessage('Stream hello')])) streamed += chunk.text
            return streamed
          }, context)
          expect(text).toContain(marker ? plainAnswer(marker, 'Stream hello') : 'Stream hello')
        }),
      )
      test(
        `${kind} (${alias}): bindTools, the call, a ToolMessage with the result, the final answer`,
        matrix.cell('tools', kind, async () => {
          const model = chat(alias).bindTools([getWeather])
          const answer = await explained(async () => {
            const messages: BaseMessage[] = [new HumanMessage(`What is the weather in ${WEATHER.city}? ${WEATHER.directive}`)]
            const first = (await model.invoke(messages)) as AIMessage
            const call = first.tool_calls?.[0]
            if (!call) throw new Error(`no tool call in the first answer: ${JSON.stringify(first.content)}`)
            expect(call.args).toEqual({ city: WEATHER.city })
            messages.push(first, (await getWeather.invoke(call)) as ToolMessage)
            return model.invoke(messages)
          }, context)
          expect(answer.text).toContain(marker ? toolLoopAnswer(marker, WEATHER.answer) : `What is the weather in ${WEATHER.city}?`)
        }),
      )
      test(
        `${kind} (${alias}): withStructuredOutput(zod, {method: 'jsonSchema'})`,
        matrix.cell('structured', kind, async () => {
          // The mock repeats the prompt: the prompt is the JSON every fake answers for this schema.
          const result = await explained(() => chat(alias).withStructuredOutput(Weather, { method: 'jsonSchema' }).invoke(JSON.stringify(SAMPLE)), context)
          expect(result).toEqual(SAMPLE)
        }),
      )
    }
  })

  describe("the docs page's examples, run as written", () => {
    for (const tag of ['chat', 'structured']) {
      test(tag, async () => {
        const run = await runSnippet(docBlock(PAGE, 'ts', tag), cg.url, cg.key)
        if (run.code !== 0 || !run.stdout.trim()) throw new Error(`the ${tag} example failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`)
        expect(run.stdout).toContain(tag === 'chat' ? OPENAI_MARKER : 'sample city')
      })
    }
  })

  matrixCheck()
})

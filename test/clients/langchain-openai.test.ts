/**
 * LangChain's `ChatOpenAI` (`@langchain/openai`, pinned in package.json) in Responses mode
 * (`useResponsesApi: true`) against a gateway process: `invoke`, `stream`, a tool loop with
 * `bindTools` (the call, a ToolMessage with the result, the final answer) and
 * `withStructuredOutput`, through an OpenAI-native alias (a fake Responses API, `responses =
 * "native"`), an OpenAI-compatible chat alias, an Anthropic alias and the mock. Also: LangChain
 * picks the Responses API by itself for a model name containing `gpt-5.6`, `-pro` or `codex`, so an
 * alias named `openai/gpt-5.6` goes there without the option. The model is built as
 * docs/clients/langchain.md shows, and the page's examples are run as written.
 */
import { AIMessage, HumanMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages'
import { tool } from '@langchain/core/tools'
import { ChatOpenAI } from '@langchain/openai'
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { z } from 'zod'
import { setup, teardown, TEST_MS } from '../support/hooks'
import {
  ALIASES,
  type ClientsGateway,
  describeResponsesExchanges,
  docBlock,
  docPage,
  type Exchange,
  explained,
  recordingFetch,
  RESPONSES_TARGETS,
  runSnippet,
  plainAnswer,
  startClientsGateway,
  toolLoopAnswer,
  toolInputEverywhere,
  WEATHER,
  WEATHER_OBJECT,
} from './harness'
import { clientMatrix, matrixCheck } from './matrix'

setDefaultTimeout(TEST_MS)

const VERSION = '1.6.0'
const PAGE = docPage('langchain.md')
const Weather = z.object({ city: z.string(), temperature_c: z.number(), conditions: z.enum(['sunny', 'cloudy', 'rain']) })

const matrix = clientMatrix({
  id: 'langchain-openai',
  order: 40,
  name: `LangChain \`ChatOpenAI\` (@langchain/openai ${VERSION}), \`useResponsesApi: true\``,
  page: 'clients/langchain.md',
  test: 'test/clients/langchain-openai.test.ts',
  rows: [
    { id: 'invoke', label: '`invoke`' },
    { id: 'stream', label: '`stream`' },
    { id: 'tools', label: '`bindTools`: the call, a `ToolMessage` with the result, the final answer' },
    { id: 'structured', label: '`withStructuredOutput(zod)`' },
    { id: 'by-name', label: 'without `useResponsesApi`, an alias named `…gpt-5.6…`: LangChain picks the Responses API by itself' },
  ],
  notApplicable: (['chat', 'anthropic', 'mock', 'gemini', 'vertex', 'bedrock', 'azure'] as const).map((target) => ({
    row: 'by-name',
    target,
    reason: "what this row tries is LangChain's choice of API by the alias's name, whatever serves the alias: tried once, on the native alias",
  })),
})

describe(`LangChain ChatOpenAI (@langchain/openai ${VERSION}) in Responses mode through the gateway`, () => {
  let cg: ClientsGateway
  let exchanges: Exchange[] = []
  let recorder: ReturnType<typeof recordingFetch>

  setup(async () => {
    cg = await startClientsGateway(toolInputEverywhere(WEATHER.toolInput))
    recorder = recordingFetch()
    exchanges = recorder.exchanges
  })
  teardown(async () => {
    await cg.stop()
  })

  /** The model as the docs page builds it, with a recording fetch. */
  const chat = (model: string, useResponsesApi: boolean | undefined = true) =>
    new ChatOpenAI({ model, useResponsesApi, apiKey: cg.key, maxRetries: 0, configuration: { baseURL: `${cg.url}/v1`, fetch: recorder.fetch } })

  const getWeather = tool(async ({ city }: { city: string }) => (city === WEATHER.city ? WEATHER.answer : `no weather for ${city}`), {
    name: 'get_weather',
    description: 'The current weather in a city',
    schema: z.object({ city: z.string() }),
  })
  const context = (from: number) => () =>
    `LangChain sent:\n${describeResponsesExchanges(exchanges.slice(from))}\n--- gateway log (tail)\n${cg.gateway.output().slice(-3000)}`
  const paths = (from: number) => exchanges.slice(from).map((e) => new URL(e.url).pathname)

  for (const { kind, alias, marker } of RESPONSES_TARGETS) {
    describe(`through ${kind} (${alias})`, () => {
      test(
        'invoke',
        matrix.cell('invoke', kind, async () => {
          const from = exchanges.length
          const answer = await explained(() => chat(alias).invoke([new HumanMessage('Say hello')]), context(from))
          expect(answer.text).toBe(marker ? plainAnswer(marker, 'Say hello') : 'Say hello')
          expect(paths(from)).toEqual(['/v1/responses'])
        }),
      )

      test(
        'stream',
        matrix.cell('stream', kind, async () => {
          const from = exchanges.length
          const text = await explained(async () => {
            let streamed = ''
            for await (const chunk of await chat(alias).stream([new HumanMessage('Stream hello')])) streamed += chunk.text
            return streamed
          }, context(from))
          expect(text).toBe(marker ? plainAnswer(marker, 'Stream hello') : 'Stream hello')
          expect(exchanges.at(-1)!.body.stream).toBe(true)
        }),
      )

      test(
        "bindTools: the call, a ToolMessage with the tool's result, the final answer",
        matrix.cell('tools', kind, async () => {
          const from = exchanges.length
          const model = chat(alias).bindTools([getWeather])
          const answer = await explained(async () => {
            const messages: BaseMessage[] = [new HumanMessage(`What is the weather in ${WEATHER.city}? ${WEATHER.directive}`)]
            const first = (await model.invoke(messages)) as AIMessage
            const call = first.tool_calls?.[0]
            if (!call) throw new Error(`no tool call in the first answer: ${JSON.stringify(first.content)}`)
            expect(call.args).toEqual({ city: WEATHER.city })
            messages.push(first, (await getWeather.invoke(call)) as ToolMessage)
            return model.invoke(messages)
          }, context(from))
          if (marker) expect(answer.text).toContain(toolLoopAnswer(marker, WEATHER.answer))
          else expect(answer.text).toBe(`What is the weather in ${WEATHER.city}?`)
        }),
      )

      test(
        'withStructuredOutput(zod)',
        matrix.cell('structured', kind, async () => {
          const from = exchanges.length
          // The mock repeats the prompt: the prompt is the JSON every fake answers for this schema.
          const result = await explained(() => chat(alias).withStructuredOutput(Weather).invoke(JSON.stringify(WEATHER_OBJECT)), context(from))
          expect(result).toEqual(WEATHER_OBJECT as z.infer<typeof Weather>)
        }),
      )
    })
  }

  test(
    'without useResponsesApi, an alias named openai/gpt-5.6: LangChain picks the Responses API by itself',
    matrix.cell('by-name', 'native', async () => {
      const from = exchanges.length
      const answer = await explained(() => chat(ALIASES.native, undefined).invoke('Say hello'), context(from))
      expect(paths(from)).toEqual(['/v1/responses'])
      expect(answer.text).toContain('heard: Say hello')
    }),
  )

  describe("the docs page's ChatOpenAI examples, run as written", () => {
    for (const tag of ['openai-responses', 'openai-tools']) {
      test(tag, async () => {
        const run = await runSnippet(docBlock(PAGE, 'ts', tag), cg.url, cg.key)
        if (run.code !== 0 || !run.stdout.trim()) throw new Error(`the ${tag} example failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`)
        expect(run.stdout).toContain(tag === 'openai-tools' ? 'the tool said: sunny, 21 C in Paris' : 'heard:')
      })
    }
  })

  matrixCheck()
})

/**
 * The Vercel AI SDK's OpenAI provider (`ai`, `@ai-sdk/openai`, pinned in package.json), whose default
 * `openai(model)` speaks the Responses API, against a gateway process: `generateText` and
 * `streamText` with a tool (a multi-step loop: the call, the tool's result, the final text) and
 * `generateObject`, through an OpenAI-native alias (a fake Responses API, `responses = "native"`),
 * an OpenAI-compatible chat alias, an Anthropic alias and the mock. The provider is built as
 * docs/clients/vercel-ai.md shows (`createOpenAI` with the gateway's URL and a key), and the page's
 * Responses examples are run as written.
 */
import { createOpenAI } from '@ai-sdk/openai'
import { generateObject, generateText, isStepCount, streamText, tool } from 'ai'
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { z } from 'zod'
import { setup, teardown, TEST_MS } from '../support/hooks'
import {
  type ClientsGateway,
  describeResponsesExchanges,
  docBlock,
  docPage,
  type Exchange,
  explained,
  recordingFetch,
  RESPONSES_TARGETS,
  runSnippet,
  startClientsGateway,
  toolLoopAnswer,
  toolInputEverywhere,
  WEATHER,
  WEATHER_OBJECT,
} from './harness'
import { clientMatrix, matrixCheck } from './matrix'

setDefaultTimeout(TEST_MS)

const VERSIONS = 'ai 7.0.173, @ai-sdk/openai 4.0.118'
const PAGE = docPage('vercel-ai.md')
const Weather = z.object({ city: z.string(), temperature_c: z.number(), conditions: z.enum(['sunny', 'cloudy', 'rain']) })

const matrix = clientMatrix({
  id: 'vercel-ai-openai',
  order: 30,
  name: `Vercel AI SDK (${VERSIONS}), \`openai(model)\`: the Responses API`,
  page: 'clients/vercel-ai.md',
  test: 'test/clients/vercel-ai-openai.test.ts',
  rows: [
    { id: 'generate-text-tools', label: '`generateText` with a tool, to the final text (`stopWhen: isStepCount(3)`)' },
    { id: 'stream-text-tools', label: '`streamText` with a tool, to the final text' },
    { id: 'generate-object', label: '`generateObject` with a zod schema' },
  ],
})

describe(`Vercel AI SDK (${VERSIONS}): openai(model), the Responses API, through the gateway`, () => {
  let cg: ClientsGateway
  let exchanges: Exchange[] = []
  let provider: ReturnType<typeof createOpenAI>

  setup(async () => {
    // generateObject is deprecated in ai 7 (still served): its warning is noise here.
    ;(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false
    cg = await startClientsGateway(toolInputEverywhere(WEATHER.toolInput))
    const recorder = recordingFetch()
    exchanges = recorder.exchanges
    // As the page builds it, with a recording fetch.
    provider = createOpenAI({ baseURL: `${cg.url}/v1`, apiKey: cg.key, fetch: recorder.fetch })
  })
  teardown(async () => {
    await cg.stop()
  })

  const tools = {
    get_weather: tool({
      description: 'The current weather in a city',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => (city === WEATHER.city ? WEATHER.answer : `no weather for ${city}`),
    }),
  }
  const prompt = `What is the weather in ${WEATHER.city}? ${WEATHER.directive}`
  const context = (from: number) => () =>
    `the SDK sent:\n${describeResponsesExchanges(exchanges.slice(from))}\n--- gateway log (tail)\n${cg.gateway.output().slice(-3000)}`

  for (const { kind, alias, marker } of RESPONSES_TARGETS) {
    const expectFinal = (text: string) => {
      if (marker) expect(text).toContain(toolLoopAnswer(marker, WEATHER.answer))
      else expect(text).toBe(`What is the weather in ${WEATHER.city}?`)
    }

    test(
      `${kind} (${alias}): generateText with a tool: the call, the tool's result, the final text`,
      matrix.cell('generate-text-tools', kind, async () => {
        const from = exchanges.length
        const result = await explained(() => generateText({ model: provider(alias), tools, stopWhen: isStepCount(3), prompt, maxRetries: 0 }), context(from))
        expect(result.steps.length).toBe(2)
        expectFinal(result.text)
        expect(exchanges.slice(from).every((e) => new URL(e.url).pathname === '/v1/responses')).toBe(true)
      }),
    )

    test(
      `${kind} (${alias}): streamText with a tool: the call, the tool's result, the final text`,
      matrix.cell('stream-text-tools', kind, async () => {
        const from = exchanges.length
        const text = await explained(async () => {
          const result = streamText({ model: provider(alias), tools, stopWhen: isStepCount(3), prompt, maxRetries: 0 })
          let streamed = ''
          for await (const part of result.fullStream) {
            if (part.type === 'error') throw part.error
            if (part.type === 'text-delta') streamed += part.text
          }
          expect((await result.steps).length).toBe(2)
          return streamed
        }, context(from))
        expectFinal(text)
        expect(exchanges.slice(from).every((e) => e.body?.stream === true)).toBe(true)
      }),
    )

    test(
      `${kind} (${alias}): generateObject with a zod schema`,
      matrix.cell('generate-object', kind, async () => {
        const from = exchanges.length
        // The mock repeats the prompt: the prompt is the JSON every fake answers for this schema.
        const { object } = await explained(
          () => generateObject({ model: provider(alias), schema: Weather, prompt: JSON.stringify(WEATHER_OBJECT), maxRetries: 0 }),
          context(from),
        )
        expect(object).toEqual(WEATHER_OBJECT as z.infer<typeof Weather>)
        expect(exchanges.at(-1)!.body.text.format).toMatchObject({ type: 'json_schema', strict: true })
      }),
    )
  }

  describe("the docs page's Responses examples, run as written", () => {
    for (const tag of ['openai-tools', 'openai-stream', 'openai-object']) {
      test(tag, async () => {
        const run = await runSnippet(docBlock(PAGE, 'ts', tag), cg.url, cg.key)
        if (run.code !== 0 || !run.stdout.trim()) throw new Error(`the ${tag} example failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`)
        expect(run.stdout).toContain(tag === 'openai-object' ? 'sample city' : 'the tool said: sunny, 21 C in Paris')
      })
    }
  })

  matrixCheck()
})

/**
 * The Vercel AI SDK's Anthropic provider (`ai`, `@ai-sdk/anthropic`, pinned in package.json) against a
 * gateway process, through an alias on a fake OpenAI-compatible upstream (test/support/fakes):
 * `generateObject` with `structuredOutputMode: 'outputFormat'`, and plain text. The provider is
 * built exactly as docs/clients/vercel-ai.md shows, and the page's examples are run as written.
 */
import { createAnthropic } from '@ai-sdk/anthropic'
import { generateObject, generateText, isStepCount, Output, streamText, tool } from 'ai'
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { z } from 'zod'
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
  runSnippet,
  startClientsGateway,
  toolInputEverywhere,
  toolLoopAnswer,
  WEATHER,
  WEATHER_OBJECT,
} from './harness'
import { clientMatrix, matrixCheck } from './matrix'

setDefaultTimeout(TEST_MS)

const PAGE = docPage('vercel-ai.md')
const Weather = z.object({ city: z.string(), temperature_c: z.number(), conditions: z.enum(['sunny', 'cloudy', 'rain']) })

const matrix = clientMatrix({
  id: 'vercel-ai-anthropic',
  order: 35,
  name: 'Vercel AI SDK (ai 7.0.173, @ai-sdk/anthropic 4.0.105), `createAnthropic(...)(model)`: the Messages API',
  page: 'clients/vercel-ai.md',
  test: 'test/clients/vercel-ai.test.ts',
  rows: [
    { id: 'generate-text-tools', label: '`generateText` with a tool, to the final text (`stopWhen: isStepCount(3)`)' },
    { id: 'stream-text-tools', label: '`streamText` with a tool, to the final text' },
    { id: 'generate-object', label: "`generateObject` with a zod schema (`structuredOutputMode: 'outputFormat'`)" },
  ],
  notApplicable: [NO_RESPONSES_REQUESTS],
})

describe('Vercel AI SDK (ai 7.0.173, @ai-sdk/anthropic 4.0.105) through the gateway', () => {
  let cg: ClientsGateway
  setup(async () => {
    cg = await startClientsGateway(toolInputEverywhere(WEATHER.toolInput))
  })
  teardown(async () => {
    await cg.stop()
  })

  /** The provider as the docs page builds it. */
  const provider = () => createAnthropic({ baseURL: `${cg.url}/v1`, apiKey: cg.key })
  const context = (before: number) => () =>
    `the upstream got:\n${describeCalls(cg.openai.chatCalls().slice(before))}\n--- gateway log (tail)\n${cg.gateway.output().slice(-3000)}`

  test("generateObject with structuredOutputMode 'outputFormat' through an OpenAI-compatible alias: the object the upstream answered", async () => {
    const before = cg.openai.chatCalls().length
    const { object } = await explained(
      () =>
        generateObject({
          model: provider()(ALIASES.openai),
          schema: Weather,
          prompt: 'The weather in Paris.',
          maxRetries: 0,
          providerOptions: { anthropic: { structuredOutputMode: 'outputFormat' } },
        }),
      context(before),
    )
    expect(object).toEqual({ city: 'sample city', temperature_c: 7, conditions: 'sunny' })
    const sent = cg.openai.chatCalls().at(-1)!.body
    expect(sent.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } })
    expect(sent.tools).toBeUndefined()
  })

  test("generateText with Output.object and structuredOutputMode 'outputFormat' through an OpenAI-compatible alias", async () => {
    const before = cg.openai.chatCalls().length
    const { output } = await explained(
      () =>
        generateText({
          model: provider()(ALIASES.openai),
          output: Output.object({ schema: Weather }),
          prompt: 'The weather in Paris.',
          maxRetries: 0,
          providerOptions: { anthropic: { structuredOutputMode: 'outputFormat' } },
        }),
      context(before),
    )
    expect(output).toEqual({ city: 'sample city', temperature_c: 7, conditions: 'sunny' })
    expect(cg.openai.chatCalls().at(-1)!.body.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } })
  })

  test('generateText through an OpenAI-compatible alias', async () => {
    const before = cg.openai.chatCalls().length
    const { text } = await explained(() => generateText({ model: provider()(ALIASES.openai), prompt: 'Say hello', maxRetries: 0 }), context(before))
    expect(text).toContain(OPENAI_MARKER)
  })

  test('the key as authToken (Authorization: Bearer) works too', async () => {
    const { text } = await generateText({
      model: createAnthropic({ baseURL: `${cg.url}/v1`, authToken: cg.key })(ALIASES.mock),
      prompt: 'hello bearer',
      maxRetries: 0,
    })
    expect(text).toContain('hello bearer')
  })

  describe('through every kind of upstream (the compatibility matrix)', () => {
    const tools = {
      get_weather: tool({
        description: 'The current weather in a city',
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => (city === WEATHER.city ? WEATHER.answer : `no weather for ${city}`),
      }),
    }
    const prompt = `What is the weather in ${WEATHER.city}? ${WEATHER.directive}`
    const log = () => `--- gateway log (tail)\n${cg.gateway.output().slice(-3000)}`

    for (const { kind, alias, marker } of MESSAGES_TARGETS) {
      const expectFinal = (text: string) => expect(text).toContain(marker ? toolLoopAnswer(marker, WEATHER.answer) : `What is the weather in ${WEATHER.city}?`)
      test(
        `${kind} (${alias}): generateText with a tool, to the final text`,
        matrix.cell('generate-text-tools', kind, async () => {
          const result = await explained(() => generateText({ model: provider()(alias), tools, stopWhen: isStepCount(3), prompt, maxRetries: 0 }), log)
          expect(result.steps.length).toBe(2)
          expectFinal(result.text)
        }),
      )
      test(
        `${kind} (${alias}): streamText with a tool, to the final text`,
        matrix.cell('stream-text-tools', kind, async () => {
          const text = await explained(async () => {
            const result = streamText({ model: provider()(alias), tools, stopWhen: isStepCount(3), prompt, maxRetries: 0 })
            let streamed = ''
            for await (const part of result.fullStream) {
              if (part.type === 'error') throw part.error
              if (part.type === 'text-delta') streamed += part.text
            }
            expect((await result.steps).length).toBe(2)
            return streamed
          }, log)
          expectFinal(text)
        }),
      )
      test(
        `${kind} (${alias}): generateObject with a zod schema`,
        matrix.cell('generate-object', kind, async () => {
          // The mock repeats the prompt: the prompt is the JSON every fake answers for this schema.
          const { object } = await explained(
            () =>
              generateObject({
                model: provider()(alias),
                schema: Weather,
                prompt: JSON.stringify(WEATHER_OBJECT),
                maxRetries: 0,
                providerOptions: { anthropic: { structuredOutputMode: 'outputFormat' } },
              }),
            log,
          )
          expect(object).toEqual(WEATHER_OBJECT as z.infer<typeof Weather>)
        }),
      )
    }
  })

  describe("the docs page's examples, run as written", () => {
    for (const tag of ['text', 'object', 'output']) {
      test(tag, async () => {
        const run = await runSnippet(docBlock(PAGE, 'ts', tag), cg.url, cg.key)
        if (run.code !== 0 || !run.stdout.trim()) throw new Error(`the ${tag} example failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`)
        expect(run.stdout).toContain(tag === 'text' ? OPENAI_MARKER : 'sample city')
      })
    }
  })

  matrixCheck()
})

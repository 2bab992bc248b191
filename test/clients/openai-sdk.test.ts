/**
 * The openai SDK's Responses API (`openai`, pinned in package.json: `client.responses.create`,
 * `.stream(...).finalResponse()`, `.parse` with a zod format) against a gateway process, through
 * each kind of upstream: an OpenAI-native alias (a fake Responses API, `responses = "native"`), an
 * OpenAI-compatible chat alias, an Anthropic alias and the mock. A function-tool loop both ways the
 * API allows: stateful (the next turn names `previous_response_id`, the gateway or the native
 * upstream holds the conversation) and stateless (`store: false`, the output items sent back).
 * The client is built as docs/clients/openai-sdk.md shows; the page's Responses examples are run.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import OpenAI from 'openai'
import { zodTextFormat } from 'openai/helpers/zod'
import type { FunctionTool, ResponseInputItem } from 'openai/resources/responses/responses'
import { z } from 'zod'
import { setup, teardown, TEST_MS } from '../support/hooks'
import {
  type ClientsGateway,
  describeResponsesExchanges,
  docBlock,
  docPage,
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

const VERSION = '7.57.0'
const PAGE = docPage('openai-sdk.md')
const Weather = z.object({ city: z.string(), temperature_c: z.number(), conditions: z.enum(['sunny', 'cloudy', 'rain']) })

const TOOL: FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
}

const matrix = clientMatrix({
  id: 'openai-sdk',
  order: 50,
  name: `openai SDK ${VERSION} (\`client.responses\`)`,
  page: 'clients/openai-sdk.md',
  test: 'test/clients/openai-sdk.test.ts',
  rows: [
    { id: 'create-stateful', label: '`responses.create`: a function-tool loop continued with `previous_response_id`' },
    { id: 'create-stateless', label: '`responses.create`: the same loop stateless (`store: false`, output items sent back)' },
    { id: 'stream', label: '`responses.stream(...).finalResponse()`: a function-tool loop, streamed' },
    { id: 'parse', label: '`responses.parse` with `zodTextFormat`' },
  ],
})

describe(`openai SDK ${VERSION}: the Responses API through the gateway`, () => {
  let cg: ClientsGateway
  setup(async () => {
    cg = await startClientsGateway(toolInputEverywhere(WEATHER.toolInput))
  })
  teardown(async () => {
    await cg.stop()
  })

  /** A client as the docs page builds it, recording what it sends. */
  const client = () => {
    const recorder = recordingFetch()
    return { sdk: new OpenAI({ baseURL: `${cg.url}/v1`, apiKey: cg.key, fetch: recorder.fetch, maxRetries: 0 }), exchanges: recorder.exchanges }
  }
  const context = (exchanges: Parameters<typeof describeResponsesExchanges>[0]) => () =>
    `the client sent:\n${describeResponsesExchanges(exchanges)}\n--- gateway log (tail)\n${cg.gateway.output().slice(-3000)}`

  const prompt = `What is the weather in ${WEATHER.city}? ${WEATHER.directive}`

  for (const { kind, alias, marker } of RESPONSES_TARGETS) {
    describe(`through ${kind} (${alias})`, () => {
      /** The final text names the tool's answer (the fakes quote it; the mock repeats the prompt). */
      const expectFinal = (text: string) => {
        if (marker) expect(text).toContain(toolLoopAnswer(marker, WEATHER.answer))
        else expect(text).toBe(`What is the weather in ${WEATHER.city}?`)
      }

      test(
        'responses.create: a function-tool loop continued with previous_response_id',
        matrix.cell('create-stateful', kind, async () => {
          const { sdk, exchanges } = client()
          await explained(async () => {
            const first = await sdk.responses.create({ model: alias, input: prompt, tools: [TOOL] })
            const call = first.output.find((item) => item.type === 'function_call')
            if (!call) throw new Error(`no function_call in the first response: ${JSON.stringify(first.output)}`)
            expect(JSON.parse(call.arguments)).toEqual({ city: WEATHER.city })
            expect(first.model).toBe(alias)
            const second = await sdk.responses.create({
              model: alias,
              previous_response_id: first.id,
              input: [{ type: 'function_call_output', call_id: call.call_id, output: WEATHER.answer }],
              tools: [TOOL],
            })
            expect(second.status).toBe('completed')
            expectFinal(second.output_text)
            expect(second.usage?.input_tokens).toBeGreaterThan(0)
          }, context(exchanges))
        }),
      )

      test(
        'responses.create: the same loop stateless (store: false, the output items sent back)',
        matrix.cell('create-stateless', kind, async () => {
          const { sdk, exchanges } = client()
          await explained(async () => {
            const input: ResponseInputItem[] = [{ role: 'user', content: prompt }]
            const first = await sdk.responses.create({ model: alias, input, tools: [TOOL], store: false })
            const call = first.output.find((item) => item.type === 'function_call')
            if (!call) throw new Error(`no function_call in the first response: ${JSON.stringify(first.output)}`)
            input.push(...(first.output as ResponseInputItem[]), { type: 'function_call_output', call_id: call.call_id, output: WEATHER.answer })
            const second = await sdk.responses.create({ model: alias, input, tools: [TOOL], store: false })
            expectFinal(second.output_text)
            // Nothing kept: the response cannot be read back.
            const kept = await sdk.responses.retrieve(second.id).then(
              () => true,
              (error: unknown) => (error instanceof OpenAI.NotFoundError ? false : Promise.reject(error)),
            )
            expect(kept).toBe(false)
          }, context(exchanges))
        }),
      )

      test(
        'responses.stream(...).finalResponse(): a function-tool loop, streamed; the call arguments reassemble exactly',
        matrix.cell('stream', kind, async () => {
          const { sdk, exchanges } = client()
          await explained(async () => {
            const stream = sdk.responses.stream({ model: alias, input: prompt, tools: [TOOL] })
            let argumentDeltas = ''
            stream.on('response.function_call_arguments.delta', (event) => (argumentDeltas += event.delta))
            const first = await stream.finalResponse()
            const call = first.output.find((item) => item.type === 'function_call')
            if (!call) throw new Error(`no function_call in the first streamed response: ${JSON.stringify(first.output)}`)
            expect(argumentDeltas).toBe(call.arguments)
            expect(JSON.parse(call.arguments)).toEqual({ city: WEATHER.city })
            const second = await sdk.responses
              .stream({
                model: alias,
                previous_response_id: first.id,
                input: [{ type: 'function_call_output', call_id: call.call_id, output: WEATHER.answer }],
                tools: [TOOL],
              })
              .finalResponse()
            expect(second.status).toBe('completed')
            expectFinal(second.output_text)
          }, context(exchanges))
        }),
      )

      test(
        'responses.parse with zodTextFormat: output_parsed is the JSON the upstream answered',
        matrix.cell('parse', kind, async () => {
          const { sdk, exchanges } = client()
          await explained(async () => {
            // The mock repeats the prompt: the prompt is the JSON every fake answers for this schema.
            const response = await sdk.responses.parse({
              model: alias,
              input: JSON.stringify(WEATHER_OBJECT),
              text: { format: zodTextFormat(Weather, 'weather') },
            })
            expect(response.output_parsed).toEqual(WEATHER_OBJECT as z.infer<typeof Weather>)
          }, context(exchanges))
        }),
      )
    })
  }

  describe("the docs page's Responses examples, run as written", () => {
    for (const tag of ['responses', 'responses-stream', 'responses-parse']) {
      test(tag, async () => {
        const run = await runSnippet(docBlock(PAGE, 'ts', tag), cg.url, cg.key)
        if (run.code !== 0 || !run.stdout.trim()) throw new Error(`the ${tag} example failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`)
      })
    }
  })

  matrixCheck()
})

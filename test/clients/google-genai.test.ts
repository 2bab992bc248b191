/**
 * The Google GenAI SDK (`@google/genai`, pinned in package.json) against the gateway's Gemini-native
 * routes, as docs/clients/gemini-cli.md sets it up (`httpOptions.baseUrl` the gateway, `apiKey` a
 * gateway key): `generateContent` and `generateContentStream` through a tool loop (a function call,
 * its response sent back with the model's turn as the SDK gave it, the final text) with thinking on,
 * through every kind of upstream (the compatibility matrix's row: the mock, the Gemini API and a
 * Gemini model on Vertex AI passed through, Anthropic, OpenAI-compatible chat, Claude on Bedrock and
 * Azure OpenAI translated); `countTokens`; the SDK's errors; and the page's example run as written.
 *
 * The gateway is the real-client tests' (test/clients/harness.ts, a gateway process) with a fake
 * Gemini API behind one more alias (test/gemini-inbound/clients.ts). The SDK talks to it through a
 * recording TCP tap, to see what it sends.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { ApiError, type Content, type FunctionDeclaration, GoogleGenAI, type Part } from '@google/genai'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { GEMINI_ALIAS, type GeminiClientsGateway, startGeminiClientsGateway } from '../gemini-inbound/clients'
import { ALIASES, docBlock, docPage, GEMINI_API_TARGETS, NO_RESPONSES_REQUESTS, runSnippet, toolInputEverywhere } from './harness'
import { clientMatrix, matrixCheck } from './matrix'
import { type Tap, tcpTap } from './tap'

setDefaultTimeout(TEST_MS)

const SDK_VERSION = '3.3.0'
const PAGE = docPage('gemini-cli.md')
const WEATHER: FunctionDeclaration = {
  name: 'get_weather',
  description: 'The weather in a city',
  parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}
const TOOL_ANSWER = 'sunny, 21 C in Paris'

/** Each kind's alias, what its final answer carries, and the prompt that makes it call the tool (the mock needs its directive). */
const TARGETS = GEMINI_API_TARGETS.map(({ kind, alias, marker }) =>
  marker
    ? { kind, alias, marker, prompt: 'What is the weather in Paris?' }
    : { kind, alias, marker: 'chatgate-mock-final', prompt: '[[tool:get_weather {"city":"Paris"}]] chatgate-mock-final' },
)

const matrix = clientMatrix({
  id: 'google-genai',
  order: 80,
  name: `@google/genai ${SDK_VERSION} (the Gemini API: \`/v1beta/models/{alias}:generateContent\`)`,
  page: 'clients/gemini-cli.md',
  test: 'test/clients/google-genai.test.ts',
  rows: [
    { id: 'generate', label: '`generateContent`: a tool loop with thinking on, to the final text' },
    { id: 'stream', label: '`generateContentStream`: the same loop streamed' },
  ],
  notApplicable: [NO_RESPONSES_REQUESTS],
})

describe(`the Google GenAI SDK ${SDK_VERSION} through the gateway`, () => {
  let gg: GeminiClientsGateway
  let tap: Tap
  let ai: GoogleGenAI
  setup(async () => {
    const toolInput = () => ({ city: 'Paris' })
    gg = await startGeminiClientsGateway(toolInputEverywhere(toolInput))
    tap = tcpTap(gg.url)
    ai = new GoogleGenAI({ apiKey: gg.key, httpOptions: { baseUrl: tap.url, apiVersion: 'v1beta' } })
  })
  teardown(async () => {
    tap?.stop()
    await gg?.stop()
  })

  const config = { tools: [{ functionDeclarations: [WEATHER] }], thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } }

  /** The answer to a call, as the caller's next content. */
  const answering = (call: Part['functionCall']): Content => ({
    role: 'user',
    parts: [{ functionResponse: { id: call!.id, name: call!.name!, response: { output: TOOL_ANSWER } } }],
  })

  for (const { kind, alias, marker, prompt } of TARGETS) {
    test(
      `${kind} (${alias}): generateContent, a tool loop with thinking on`,
      matrix.cell('generate', kind, async () => {
        const contents: Content[] = [{ role: 'user', parts: [{ text: prompt }] }]
        const first = await ai.models.generateContent({ model: alias, contents, config })
        expect(first.modelVersion).toBe(alias)
        const call = first.functionCalls?.[0]
        expect(call).toMatchObject({ name: 'get_weather', args: { city: 'Paris' } })
        contents.push(first.candidates![0]!.content!, answering(call))
        const second = await ai.models.generateContent({ model: alias, contents, config })
        expect(second.text).toContain(marker)
        if (alias !== ALIASES.mock) expect(second.text).toContain(TOOL_ANSWER)
        expect(second.usageMetadata?.totalTokenCount).toBeGreaterThan(0)
      }),
    )

    test(
      `${kind} (${alias}): generateContentStream, the same loop streamed`,
      matrix.cell('stream', kind, async () => {
        const contents: Content[] = [{ role: 'user', parts: [{ text: prompt }] }]
        const parts: Part[] = []
        for await (const chunk of await ai.models.generateContentStream({ model: alias, contents, config }))
          parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []))
        const call = parts.find((p) => p.functionCall)?.functionCall
        expect(call).toMatchObject({ name: 'get_weather', args: { city: 'Paris' } })
        contents.push({ role: 'model', parts }, answering(call))
        let text = ''
        let finish: string | undefined
        for await (const chunk of await ai.models.generateContentStream({ model: alias, contents, config })) {
          text += chunk.text ?? ''
          finish = chunk.candidates?.[0]?.finishReason ?? finish
        }
        expect(text).toContain(marker)
        expect(finish).toBe('STOP')
      }),
    )
  }

  test('countTokens on a translated alias and the mock', async () => {
    for (const alias of [ALIASES.anthropic, ALIASES.mock]) {
      const counted = await ai.models.countTokens({ model: alias, contents: 'How many tokens is this?' })
      expect(counted.totalTokens).toBeGreaterThan(0)
    }
  })

  test("the SDK's errors: Google's shape, its status, the gateway's message", async () => {
    const unknown = await ai.models.generateContent({ model: 'nope/nope', contents: 'hi' }).catch((error: unknown) => error)
    expect(unknown).toBeInstanceOf(ApiError)
    expect((unknown as ApiError).status).toBe(404)
    expect(JSON.parse((unknown as ApiError).message).error).toMatchObject({ code: 404, status: 'NOT_FOUND' })
    const wrongKey = new GoogleGenAI({ apiKey: 'sk-cg-wrong', httpOptions: { baseUrl: gg.url, apiVersion: 'v1beta' } })
    const refused = await wrongKey.models.generateContent({ model: ALIASES.mock, contents: 'hi' }).catch((error: unknown) => error)
    expect((refused as ApiError).status).toBe(401)
    const search = await ai.models
      .generateContent({ model: ALIASES.anthropic, contents: 'hi', config: { tools: [{ googleSearch: {} }] } })
      .catch((error: unknown) => error)
    expect((search as ApiError).status).toBe(400)
    expect((search as ApiError).message).toContain('tools.0.googleSearch')
  })

  test('what the SDK sends (recorded at the tap): the key in x-goog-api-key, config as generationConfig and tools', () => {
    const request = tap.requests.find((r) => r.method === 'POST' && r.path === `/v1beta/models/${GEMINI_ALIAS}:generateContent`)!
    expect(request.headers['x-goog-api-key']).toBe(gg.key)
    expect(request.headers['x-goog-api-client']).toStartWith(`google-genai-sdk/${SDK_VERSION} `)
    const body = JSON.parse(request.body.toString())
    expect(Object.keys(body).sort()).toEqual(['contents', 'generationConfig', 'tools'])
    expect(body.generationConfig).toEqual({ thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } })
    const stream = tap.requests.find((r) => r.path.includes(':streamGenerateContent'))!
    expect(stream.path).toEndWith(':streamGenerateContent?alt=sse')
    expect(tap.requests.some((r) => r.path.includes('key='))).toBe(false)
  })

  test("without apiVersion the SDK asks for /v1/models/...: a 404 that names the route (the page's troubleshooting)", async () => {
    const v1 = new GoogleGenAI({ apiKey: gg.key, httpOptions: { baseUrl: gg.url } })
    const error = (await v1.models.generateContent({ model: ALIASES.mock, contents: 'hi' }).catch((e: unknown) => e)) as ApiError
    expect(error.status).toBe(404)
    expect(error.message).toContain('Unknown route: POST /v1/models/local/echo:generateContent')
    expect(PAGE).toContain('Unknown route: POST /v1/models/local/echo:generateContent')
  })

  test("the page's example runs as written", async () => {
    const run = await runSnippet(docBlock(PAGE, 'ts', 'sdk'), gg.url, gg.key)
    if (run.code !== 0) throw new Error(`the example failed:\n${run.stdout}\n${run.stderr}`)
    expect(run.stdout).toContain('Say hello\n')
    expect(run.stdout).toContain('Say hello, streamed')
  })

  matrixCheck()
})

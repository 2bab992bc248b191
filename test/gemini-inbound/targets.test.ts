/**
 * The Gemini-native routes on each kind of target, JSON and streamed, through tool loops:
 *   - a Gemini target gets the caller's body byte for byte (its model is the URL's), and its answer
 *     comes back as it sent it, `modelVersion` made the alias; its thought signatures round-trip
 *     (the fake refuses a call that comes back without its own);
 *   - an Anthropic target is translated both ways, its signed thinking sealed in the answer's
 *     thoughtSignature and given back on the next turn (the fake refuses a tool loop without it);
 *   - an OpenAI-compatible target likewise, its reasoning text back on the assistant message;
 *   - a fallback from Gemini to Anthropic mid-conversation, with tool calls in the history.
 * The fakes (test/support/fakes/) are written from the providers' published references.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { ANTHROPIC_MARKER } from '../support/fakes/anthropic'
import { GEMINI_MARKER, SKIP_SIGNATURE } from '../support/fakes/gemini'
import { OPENAI_MARKER } from '../support/fakes/openai'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { waitFor } from '../support/wait'
import { ALIASES, type GeminiGateway, sseChunks, startGeminiGateway } from './support'

setDefaultTimeout(TEST_MS)

/** A JSON answer, untyped: the tests read Google's shapes field by field. */
const json = (response: Response): Promise<any> => response.json()

const TOOLS = [
  {
    functionDeclarations: [
      {
        name: 'get_weather',
        description: 'Weather for a city',
        parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ],
  },
]
const THINKING = { thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } }
const ASK = { role: 'user', parts: [{ text: 'What is the weather in Paris?' }] }

type Json = Record<string, any>

describe('Gemini-native callers, each kind of target', () => {
  let gg: GeminiGateway
  setup(async () => {
    // A structured answer is a forced tool on Anthropic: its input is then the schema's sample.
    const toolInput = (name: string) => ({ city: name === 'get_weather' ? 'Paris' : 'sample city' })
    gg = await startGeminiGateway({ anthropic: { toolInput }, openai: { toolInput } })
  })
  teardown(() => gg?.stop())

  const post = (alias: string, method: string, body: unknown) =>
    fetch(`${gg.url}/v1beta/models/${alias}:${method}${method === 'streamGenerateContent' ? '?alt=sse' : ''}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': gg.key },
      body: JSON.stringify(body),
    })

  /** One model turn from either method: the parts of the answer (a stream's merged), its finish reason and the last usage. */
  async function turn(alias: string, stream: boolean, body: unknown): Promise<{ parts: Json[]; finish: string; usage: Json; response: Response; raw: string }> {
    const response = await post(alias, stream ? 'streamGenerateContent' : 'generateContent', body)
    const raw = await response.text()
    if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${raw}`)
    const answers: Json[] = stream ? sseChunks(raw) : [JSON.parse(raw)]
    for (const answer of answers) expect(answer.modelVersion).toBe(alias)
    const parts = answers.flatMap((a) => a.candidates?.[0]?.content?.parts ?? [])
    const last = answers.at(-1)!
    return { parts, finish: last.candidates?.[0]?.finishReason, usage: last.usageMetadata, response, raw }
  }

  /** A tool loop: a call, its answer sent back with the model turn as given, the final text. */
  async function toolLoop(alias: string, stream: boolean) {
    const first = await turn(alias, stream, { contents: [ASK], tools: TOOLS, generationConfig: THINKING })
    const call = first.parts.find((p) => p.functionCall)!
    expect(call?.functionCall).toMatchObject({ name: 'get_weather', args: { city: 'Paris' } })
    const history = [
      ASK,
      { role: 'model', parts: first.parts },
      { role: 'user', parts: [{ functionResponse: { id: call.functionCall.id, name: 'get_weather', response: { output: 'sunny, 21 C' } } }] },
    ]
    const second = await turn(alias, stream, { contents: history, tools: TOOLS, generationConfig: THINKING })
    return {
      first,
      call,
      second,
      text: second.parts
        .filter((p) => !p.thought)
        .map((p) => p.text ?? '')
        .join(''),
    }
  }

  for (const stream of [false, true]) {
    const how = stream ? 'streamed' : 'JSON'

    test(`Gemini (${how}): the body as sent, the answer as Gemini sent it but modelVersion; signatures round-trip`, async () => {
      const sent = gg.gemini.generateCalls().length
      const { call, second, text } = await toolLoop(ALIASES.gemini, stream)
      expect(call.thoughtSignature).toBeString()
      expect(text).toContain(GEMINI_MARKER)
      expect(text).toContain('sunny, 21 C')
      const calls = gg.gemini.generateCalls().slice(sent)
      expect(calls.map((c) => c.path)).toEqual(Array(2).fill(`/v1beta/models/gemini-2.5-flash:${stream ? 'streamGenerateContent' : 'generateContent'}`))
      // Byte for byte what the caller sent.
      const history = JSON.parse(calls[1]!.text)
      expect(history.contents[1].parts.find((p: Json) => p.functionCall).thoughtSignature).toBe(call.thoughtSignature)
      expect(second.response.headers.get('x-svc-model')).toBe('gemini-2.5-flash')
      expect(second.response.headers.get('x-svc-dropped')).toBeNull()
      // The answer as the fake wrote it, only modelVersion changed.
      const written = gg.gemini.model.answers.at(-1)!
      if (!stream) expect(JSON.parse(second.raw)).toEqual({ ...written, modelVersion: ALIASES.gemini })
      expect(second.usage).toEqual(written.usageMetadata)
    })

    test(`Anthropic (${how}): translated both ways; signed thinking sealed in the call's thoughtSignature and given back`, async () => {
      const sent = gg.anthropic.messageCalls().length
      const { first, call, text } = await toolLoop(ALIASES.anthropic, stream)
      const thoughts = first.parts.filter((p) => p.thought).map((p) => p.text)
      expect(thoughts.join('')).toStartWith('fake-anthropic-a thought')
      expect(call.functionCall.id).toStartWith('toolu_fake_a_')
      expect(call.thoughtSignature).toStartWith('cgr1.')
      expect(first.finish).toBe('STOP')
      expect(text).toContain(ANTHROPIC_MARKER)
      expect(text).toContain('(the tool said: sunny, 21 C)')
      const [request, followUp] = gg.anthropic
        .messageCalls()
        .slice(sent)
        .map((c) => c.body)
      expect(request.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 })
      expect(request.tools.map((t: Json) => t.name)).toEqual(['get_weather'])
      // The thinking block the fake signed came back first in the turn of the call (the fake checks its signature).
      const assistant = followUp.messages[1]
      expect(assistant.content.map((b: Json) => b.type)).toEqual(['thinking', 'tool_use'])
      expect(assistant.content[0].signature).toStartWith('fakesig_a_')
      expect(followUp.messages[2].content[0]).toMatchObject({ type: 'tool_result', tool_use_id: call.functionCall.id, content: 'sunny, 21 C' })
    })

    test(`OpenAI-compatible (${how}): translated both ways; its reasoning text back on the assistant message`, async () => {
      const sent = gg.openai.chatCalls().length
      const { first, text } = await toolLoop(ALIASES.openai, stream)
      expect(first.parts[0]).toMatchObject({ thought: true })
      expect(text).toContain(OPENAI_MARKER)
      const [request, followUp] = gg.openai
        .chatCalls()
        .slice(sent)
        .map((c) => c.body)
      expect(request.reasoning_effort).toBe('low')
      const assistant = followUp.messages.findLast((m: Json) => m.role === 'assistant')
      expect(assistant.reasoning_content).toStartWith('fake-openai reasoned')
      expect(assistant.tool_calls[0].function).toEqual({ name: 'get_weather', arguments: '{"city":"Paris"}' })
    })
  }

  test('structured output: responseMimeType and responseJsonSchema on a translated target', async () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
    const { parts } = await turn(ALIASES.anthropic, false, {
      contents: [ASK],
      generationConfig: { responseMimeType: 'application/json', responseJsonSchema: schema },
    })
    expect(JSON.parse(parts.map((p) => p.text).join(''))).toEqual({ city: 'sample city' })
  })

  test("countTokens on each kind: Gemini counts the caller's request itself (model replaced), Anthropic its translation, OpenAI-compatible locally", async () => {
    const body = { generateContentRequest: { model: `models/${ALIASES.gemini}`, contents: [ASK] } }
    const gemini = await json(await post(ALIASES.gemini, 'countTokens', body))
    expect(gemini.totalTokens).toBeGreaterThan(0)
    const counted = gg.gemini.calls.findLast((c) => c.path.endsWith(':countTokens'))!
    expect(counted.path).toBe('/v1beta/models/gemini-2.5-flash:countTokens')
    expect(counted.body.generateContentRequest.model).toBe('models/gemini-2.5-flash')
    for (const alias of [ALIASES.anthropic, ALIASES.openai]) {
      const answer = await json(await post(alias, 'countTokens', { contents: [ASK] }))
      expect(answer.totalTokens).toBeGreaterThan(0)
    }
    expect(gg.anthropic.calls.at(-1)!.path).toBe('/v1/messages/count_tokens')
    expect(gg.anthropic.calls.at(-1)!.body.max_tokens).toBeUndefined()
  })

  test("a fallback mid-conversation, with tool calls in the history: Gemini's signatures are named as dropped for Anthropic", async () => {
    const first = await turn(ALIASES.fallback, false, { contents: [ASK], tools: TOOLS, generationConfig: THINKING })
    expect(first.response.headers.get('x-svc-upstream')).toBe('gem')
    const at = first.parts.findIndex((p) => p.functionCall)
    const history = [
      ASK,
      { role: 'model', parts: first.parts },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: 'rain' } } }] },
    ]
    gg.gemini.failNext(1, 503, 'UNAVAILABLE', 'The model is overloaded.')
    const second = await turn(ALIASES.fallback, false, { contents: history, tools: TOOLS, generationConfig: THINKING })
    expect(second.response.headers.get('x-svc-upstream')).toBe('claude')
    expect(second.response.headers.get('x-svc-dropped')).toBe('thoughtSignature')
    expect(second.parts.map((p) => p.text).join('')).toContain(`${ANTHROPIC_MARKER} (the tool said: rain)`)
    const translated = gg.anthropic.messageCalls().at(-1)!.body
    expect(translated.messages[1].content).toEqual([{ type: 'tool_use', id: `call_1_${at}`, name: 'get_weather', input: { city: 'Paris' } }])
    expect(translated.messages[2].content).toEqual([{ type: 'tool_result', tool_use_id: `call_1_${at}`, content: 'rain' }])
  })

  test("and back: a call Anthropic made (its reasoning sealed) goes to Gemini with Google's stand-in signature, which Gemini accepts", async () => {
    gg.gemini.failNext(1, 503, 'UNAVAILABLE', 'The model is overloaded.')
    const first = await turn(ALIASES.fallback, false, { contents: [ASK], tools: TOOLS, generationConfig: THINKING })
    expect(first.response.headers.get('x-svc-upstream')).toBe('claude')
    const call = first.parts.find((p) => p.functionCall)!
    expect(call.thoughtSignature).toStartWith('cgr1.')
    const history = [
      ASK,
      { role: 'model', parts: first.parts },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: 'snow' } } }] },
    ]
    const second = await turn(ALIASES.fallback, false, { contents: history, tools: TOOLS, generationConfig: THINKING })
    expect(second.response.headers.get('x-svc-upstream')).toBe('gem')
    expect(second.parts.map((p) => p.text ?? '').join('')).toContain(GEMINI_MARKER)
    const relayed = gg.gemini.generateCalls().at(-1)!.text
    expect(relayed).not.toContain('cgr1.')
    expect(relayed).toContain(`"thoughtSignature":"${SKIP_SIGNATURE}"`)
  })

  test("Google's errors through: RESOURCE_EXHAUSTED is 429 with its wait as Retry-After and RetryInfo", async () => {
    gg.gemini.failNext(1, 429, 'RESOURCE_EXHAUSTED', 'Quota exceeded', [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' }])
    const limited = await post(ALIASES.limited, 'generateContent', { contents: [ASK] })
    expect(limited.status).toBe(429)
    expect(limited.headers.get('retry-after')).toBe('7')
    const { error } = await json(limited)
    expect(error).toMatchObject({ code: 429, status: 'RESOURCE_EXHAUSTED' })
    expect(error.details).toContainEqual({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' })
  })

  test('usage of a passed-through answer is what its usageMetadata says (thoughts in the completion)', async () => {
    const usage = async () => {
      const report = await json(await fetch(`${gg.url}/v1/usage`, { headers: { 'x-goog-api-key': gg.key } }))
      return report.data.find((row: Json) => row.alias === ALIASES.gemini) ?? { requests: 0, prompt_tokens: 0, completion_tokens: 0 }
    }
    const before = await usage()
    const { usage: meta } = await turn(ALIASES.gemini, true, { contents: [ASK], generationConfig: THINKING })
    const after = await waitFor(async () => {
      const now = await usage()
      return now.requests > before.requests && now
    }, 'the streamed request in the usage report')
    expect(after.prompt_tokens - before.prompt_tokens).toBe(meta.promptTokenCount)
    expect(after.completion_tokens - before.completion_tokens).toBe(meta.candidatesTokenCount + meta.thoughtsTokenCount)
  })
})

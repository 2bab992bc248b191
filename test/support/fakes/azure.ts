/**
 * A fake Azure OpenAI resource, written from Azure OpenAI's REST reference
 * (https://learn.microsoft.com/azure/ai-foundry/openai/reference, and for the v1 API
 * https://learn.microsoft.com/azure/ai-foundry/openai/reference-preview-latest):
 *   - the v1 API: `POST {endpoint}/openai/v1/chat/completions`, `/embeddings`, `/responses`, the
 *     deployment named by the body's `model`, no `api-version` (Azure refuses one on /v1 paths);
 *   - the deployment API: `POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...`
 *     and `/embeddings`, an unknown deployment a 404 `DeploymentNotFound`;
 *   - the `api-key` header (a wrong or missing one: 401, as Azure answers);
 *   - content filtering (https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter):
 *     `prompt_filter_results` and each choice's `content_filter_results` on answers (in a stream, a
 *     first chunk with no choices carries the prompt's), a prompt refused with 400 `content_filter`
 *     (`innererror.code: ResponsibleAIPolicyViolation`), an answer stopped with finish_reason
 *     `content_filter`.
 * Chat completions and Responses are answered by the strict OpenAI fakes behind it (fakes/openai.ts,
 * fakes/openai-responses.ts), so a field that leaks through the gateway is refused as OpenAI would.
 * Triggers in the last user text: `[[filtered]]` (the prompt refused), `[[filter-output]]` (the
 * answer stopped by the filter).
 */
import { fakeOpenAI, type FakeOpenAI, type FakeOpenAIOptions } from './openai'
import { fakeOpenAIResponses, type FakeOpenAIResponses, type FakeOpenAIResponsesOptions } from './openai-responses'
import { recordingServer, type RecordedCall, roughTokens } from './common'

export const FAKE_AZURE_KEY = 'azure-fake-key-0000000000000000'
/** The text of its chat answers, and of its Responses answers. */
export const AZURE_CHAT_MARKER = 'chatgate-azure-final'
export const AZURE_RESPONSES_MARKER = 'chatgate-azure-responses'

export interface FakeAzureOptions {
  apiKey?: string
  /** The deployments the resource has (default `gpt-4o-prod`, `embed-prod`). */
  deployments?: string[]
  /** A response to give instead of the normal one (a failure the test wants), or null. */
  refuse?: (call: RecordedCall) => Response | null
  /** How the OpenAI fakes behind it answer (tool arguments, the Bash command); their key is the resource's own. */
  chat?: Omit<FakeOpenAIOptions, 'apiKey'>
  responses?: Omit<FakeOpenAIResponsesOptions, 'apiKey'>
}

export interface FakeAzure {
  /** The `endpoint` of an upstream of kind "azure". */
  endpoint: string
  calls: RecordedCall[]
  chat: FakeOpenAI
  responses: FakeOpenAIResponses
  stop(): void
}

type Json = Record<string, any>

const SAFE = {
  hate: { filtered: false, severity: 'safe' },
  self_harm: { filtered: false, severity: 'safe' },
  sexual: { filtered: false, severity: 'safe' },
  violence: { filtered: false, severity: 'safe' },
}
const PROMPT_FILTER = [{ prompt_index: 0, content_filter_results: SAFE }]

const azureError = (status: number, code: string, message: string, extra: Json = {}) =>
  Response.json({ error: { code, message, param: null, type: null, ...extra } }, { status })

const lastUserText = (body: Json) => {
  const content = (body.messages as Json[] | undefined)?.findLast((m) => m.role === 'user')?.content
  return typeof content === 'string' ? content : Array.isArray(content) ? content.map((p: Json) => p.text ?? '').join('') : String(body.input ?? '')
}

/** The prompt refused by the filter, as Azure answers it. */
const promptFiltered = () =>
  azureError(
    400,
    'content_filter',
    "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
    {
      param: 'prompt',
      status: 400,
      innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { ...SAFE, violence: { filtered: true, severity: 'high' } } },
    },
  )

/** An answer the filter stopped: no content, finish_reason content_filter. */
function outputFiltered(model: string, stream: boolean): Response {
  const base = { id: 'chatcmpl-azure-filtered', created: 1_700_000_000, model }
  const usage = { prompt_tokens: 9, completion_tokens: 0, total_tokens: 9 }
  const filtered = { ...SAFE, violence: { filtered: true, severity: 'medium' } }
  if (!stream) {
    return Response.json({
      ...base,
      object: 'chat.completion',
      prompt_filter_results: PROMPT_FILTER,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, refusal: null },
          finish_reason: 'content_filter',
          logprobs: null,
          content_filter_results: filtered,
        },
      ],
      usage,
    })
  }
  const chunks = [
    { id: '', object: '', created: 0, model: '', choices: [], prompt_filter_results: PROMPT_FILTER },
    {
      ...base,
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, content_filter_results: {} }],
    },
    { ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'content_filter', content_filter_results: filtered }] },
    { ...base, object: 'chat.completion.chunk', choices: [], usage },
  ]
  return new Response(`${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`, { headers: { 'content-type': 'text/event-stream' } })
}

/** A chat answer of the OpenAI fake, with Azure's content-filter results added (a stream gets its first, choiceless chunk). */
async function decorated(upstream: Response, stream: boolean): Promise<Response> {
  if (!upstream.ok) return upstream
  if (!stream) {
    const body = (await upstream.json()) as Json
    for (const choice of body.choices) choice.content_filter_results = SAFE
    return Response.json({ ...body, prompt_filter_results: PROMPT_FILTER })
  }
  const first = `data: ${JSON.stringify({ id: '', object: '', created: 0, model: '', choices: [], prompt_filter_results: PROMPT_FILTER })}\n\n`
  return new Response(first + (await upstream.text()), { headers: { 'content-type': 'text/event-stream' } })
}

function embeddings(body: Json, model: string): Response {
  const inputs: string[] = typeof body.input === 'string' ? [body.input] : body.input
  const size = body.dimensions ?? 8
  const data = inputs.map((text, index) => ({ object: 'embedding', index, embedding: Array.from({ length: size }, (_, i) => ((text.length + i) % 13) / 13) }))
  const tokens = inputs.reduce((sum, text) => sum + roughTokens(text), 0)
  return Response.json({ object: 'list', data, model, usage: { prompt_tokens: tokens, total_tokens: tokens } })
}

export function fakeAzure(options: FakeAzureOptions = {}): FakeAzure {
  const apiKey = options.apiKey ?? FAKE_AZURE_KEY
  const deployments = new Set(options.deployments ?? ['gpt-4o-prod', 'embed-prod'])
  const chat = fakeOpenAI({ marker: AZURE_CHAT_MARKER, ...options.chat })
  const responses = fakeOpenAIResponses({ marker: AZURE_RESPONSES_MARKER, ...options.responses })
  const forward = (base: string, path: string, call: RecordedCall) =>
    fetch(`${base}${path}`, {
      method: call.method,
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-openai-fake' },
      body: call.method === 'POST' ? call.text : undefined,
    })

  async function chatCompletion(call: RecordedCall, model: string): Promise<Response> {
    const text = lastUserText(call.body)
    if (text.includes('[[filtered]]')) return promptFiltered()
    if (text.includes('[[filter-output]]')) return outputFiltered(model, call.body.stream === true)
    return decorated(await forward(chat.url, '/chat/completions', call), call.body.stream === true)
  }

  const server = recordingServer(async (call) => {
    if (call.headers.get('api-key') !== apiKey)
      return azureError(
        401,
        '401',
        'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
      )
    const refused = options.refuse?.(call)
    if (refused) return refused
    const version = new URLSearchParams(call.search).get('api-version')
    if (call.path.startsWith('/openai/v1/')) {
      if (version !== null) return azureError(400, 'BadRequest', 'api-version query parameter is not allowed when using /v1 path')
      if (call.path === '/openai/v1/chat/completions') return chatCompletion(call, call.body.model)
      if (call.path === '/openai/v1/embeddings') return embeddings(call.body, call.body.model)
      if (call.path.startsWith('/openai/v1/responses'))
        return forward(responses.url.replace(/\/v1$/, ''), call.path.slice('/openai'.length) + call.search, call)
      return azureError(404, '404', 'Resource not found')
    }
    const match = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/.exec(call.path)
    if (!match) return azureError(404, '404', 'Resource not found')
    if (version === null) return azureError(404, '404', 'Resource not found')
    const deployment = decodeURIComponent(match[1]!)
    if (!deployments.has(deployment)) return azureError(404, 'DeploymentNotFound', 'The API deployment for this resource does not exist.')
    return match[2] === 'embeddings' ? embeddings(call.body, deployment) : chatCompletion(call, deployment)
  })
  return {
    endpoint: server.origin,
    calls: server.calls,
    chat,
    responses,
    stop() {
      server.stop()
      chat.stop()
      responses.stop()
    },
  }
}

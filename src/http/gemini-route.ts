/**
 * The Gemini-native routes, `POST /v1beta/models/{model}:{method}` (Gemini CLI, the Google GenAI
 * SDK): the alias's slash splits the path, so `{name}:{method}` is one path segment, split at its last
 * colon here. Two route files mount this: routes/v1beta/models/[prefix]/[action].ts (`local/echo`)
 * and routes/v1beta/models/[prefix].ts (one segment: an alias written `local%2Fecho`, or a name
 * without a slash, which is then 404 model_not_found). Errors on /v1beta are in Google's shape (src/app.ts).
 */
import { Elysia, t, type TSchema } from 'elysia'
import { invalidRequest } from '../errors'
import type { Gateway } from '../gateway'
import { recordOf } from '../observe/request-record'
import { geminiCountTokens, geminiExchange } from '../serve/gemini'
import { serve } from '../serve/serve'
import { checkGenerateContentRequest } from '../wire/gemini/inbound-cannot-serve'
import { GEMINI_METHODS, type GeminiMethod, splitModelAction } from '../wire/gemini/inbound-types'
import type { CountTokensRequest, GenerateContentRequest } from '../wire/gemini/types'
import { rawBodyOf } from './body'
import { callerAuth } from './caller'
import { unknownRoute } from './conventions'

/** The OpenAPI security of these routes: Google's header, or the gateway's usual ones. */
export const GEMINI_SECURITY: Record<string, string[]>[] = [{ googApiKey: [] }, { bearerAuth: [] }, { apiKeyHeader: [] }]

/** Google's error body, as every /v1beta route answers errors. */
export const GoogleErrorSchema = t.Object(
  {
    error: t.Object({
      code: t.Integer({ examples: [400, 401, 404, 429, 502] }),
      message: t.String(),
      status: t.String({ examples: ['INVALID_ARGUMENT', 'UNAUTHENTICATED', 'NOT_FOUND', 'RESOURCE_EXHAUSTED', 'UNAVAILABLE'] }),
      details: t.Optional(t.Array(t.Object({}, { additionalProperties: true }))),
    }),
  },
  { title: 'GoogleError' },
)

const Content = t.Object(
  { role: t.Optional(t.String({ description: 'user or model' })), parts: t.Array(t.Object({}, { additionalProperties: true })) },
  { additionalProperties: true },
)

/** The body of all three methods (countTokens takes `contents`, or the whole request in `generateContentRequest`). */
const RequestSchema = () =>
  t.Object(
    {
      contents: t.Optional(t.Array(Content)),
      systemInstruction: t.Optional(Content),
      tools: t.Optional(t.Array(t.Object({}, { additionalProperties: true }))),
      toolConfig: t.Optional(t.Object({}, { additionalProperties: true })),
      generationConfig: t.Optional(t.Object({}, { additionalProperties: true })),
      generateContentRequest: t.Optional(t.Object({}, { additionalProperties: true })),
    },
    { additionalProperties: true, title: 'GenerateContentRequest', error: 'Invalid request: the body must be a JSON object' },
  )

const ERRORS = Object.fromEntries([400, 401, 403, 404, 413, 415, 429, 502, 503, 504].map((status) => [status, GoogleErrorSchema]))

/** Keys in the query string end up in access logs: refused, whatever else the request holds, before the key in the header is even read. */
function refuseQueryKey(request: Request): void {
  const query = request.url.indexOf('?')
  if (query !== -1 && new URLSearchParams(request.url.slice(query + 1)).has('key'))
    throw invalidRequest('API keys are not accepted in the query string (?key=): send the key in the x-goog-api-key header', {
      code: 'key_in_query',
      param: 'key',
    })
}

/** The method a path segment names, or the 404 of an unknown route. */
function methodOf(segment: string, request: Request): { name: string; method: GeminiMethod } {
  const split = splitModelAction(segment)
  if (!split || !(GEMINI_METHODS as readonly string[]).includes(split.method)) throw unknownRoute('POST', recordOf(request).path)
  return { name: split.name, method: split.method as GeminiMethod }
}

const DESCRIPTION =
  'Google\'s generateContent API, so Gemini CLI (`GOOGLE_GEMINI_BASE_URL`) and the Google GenAI SDK work unchanged: `POST /v1beta/models/{prefix}/{name}:generateContent`, `:streamGenerateContent?alt=sse` and `:countTokens`, the model being a public alias from GET /v1/models. The key goes in `x-goog-api-key` (or `Authorization: Bearer`, `x-api-key`); a key in the query string (`?key=`) is refused with 400. Gemini and Vertex AI targets get the body as sent; every other target is translated both ways. A stream the upstream breaks ends with a chunk `{"error":{...}}`. Errors have Google\'s shape `{"error":{"code","message","status"}}`.'

/** Where a route file finds the alias and the method in its path: its parameters' schema, and how to read them. */
export interface GeminiPath {
  params: TSchema
  /** The alias's prefix (null when the segment holds the whole alias) and the `name:method` segment. */
  nameOf(params: Record<string, string>): { prefix: string | null; segment: string }
  /** Left out of the OpenAPI document (the encoded form, documented with the other). */
  hide?: boolean
}

/** The route for `/v1beta/models/...{segment}`. */
export function geminiRoute(gateway: Gateway, path: GeminiPath) {
  return new Elysia()
    .derive({ as: 'scoped' }, ({ request }) => {
      refuseQueryKey(request)
      return {}
    })
    .use(callerAuth(gateway))
    .post(
      '',
      async ({ body, caller, request, set, params, query }) => {
        const { prefix, segment } = path.nameOf(params as Record<string, string>)
        const { name, method } = methodOf(segment, request)
        const alias = prefix === null ? name : `${prefix}/${name}`
        const record = recordOf(request)
        const call = { caller, clientSignal: request.signal, headers: set.headers, record }
        if (method === 'countTokens') {
          const count = body as CountTokensRequest
          checkGenerateContentRequest((count.generateContentRequest ?? count) as GenerateContentRequest)
          return geminiCountTokens(gateway.serving, call, alias, count, rawBodyOf(request)) as unknown as Promise<Response>
        }
        const stream = method === 'streamGenerateContent'
        if (stream && (query as Record<string, string | undefined>).alt !== 'sse')
          throw invalidRequest('streamGenerateContent is served as server-sent events only: add ?alt=sse', { param: 'alt' })
        const generate = body as GenerateContentRequest
        checkGenerateContentRequest(generate)
        gateway.holdConnection(request)
        record.messages = generate.contents
        const context = { requestId: record.id, sealer: gateway.sealer }
        return serve(gateway.serving, call, geminiExchange(alias, generate, rawBodyOf(request), stream, context)) as Promise<Response>
      },
      {
        params: path.params,
        body: RequestSchema(),
        response: { 200: t.Object({}, { additionalProperties: true, title: 'GenerateContentResponse', noValidate: true }), ...ERRORS },
        detail: {
          hide: path.hide ?? false,
          tags: ['Gemini'],
          summary: "Generate content, stream it or count its tokens (Google's Gemini API)",
          description: DESCRIPTION,
          security: GEMINI_SECURITY,
        },
      },
    )
}

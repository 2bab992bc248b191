import { Elysia } from 'elysia'
import { CALLER_SECURITY, callerAuth } from '../../src/http/caller'
import { EmbeddingsRequestSchema, EmbeddingsResponseSchema } from '../../src/http/inbound-schemas'
import { rawBodyOf } from '../../src/http/body'
import { recordOf } from '../../src/observe/request-record'
import { defineRoute } from '../../src/http/route'
import { ErrorSchema } from '../../src/http/schemas'
import { embeddingsExchange } from '../../src/serve/embeddings'
import { serve } from '../../src/serve/serve'
import type { EmbeddingsRequest } from '../../src/wire/openai-embeddings/types'

export default defineRoute((gateway) =>
  new Elysia().use(callerAuth(gateway)).post(
    '',
    ({ body, caller, request, set }) => {
      gateway.holdConnection(request)
      const record = recordOf(request)
      const call = { caller, clientSignal: request.signal, headers: set.headers, record, requestHeaders: request.headers }
      return serve(gateway.serving, call, embeddingsExchange(body as EmbeddingsRequest, rawBodyOf(request))) as Promise<Response>
    },
    {
      body: EmbeddingsRequestSchema,
      response: {
        200: EmbeddingsResponseSchema,
        400: ErrorSchema,
        401: ErrorSchema,
        403: ErrorSchema,
        404: ErrorSchema,
        413: ErrorSchema,
        415: ErrorSchema,
        429: ErrorSchema,
        502: ErrorSchema,
        503: ErrorSchema,
        504: ErrorSchema,
      },
      detail: {
        tags: ['Embeddings'],
        summary: 'Create embeddings',
        description:
          "OpenAI's embeddings API over public aliases (`local/embed`, `openai/embed`). OpenAI-compatible upstreams get the body as sent, only `model` replaced; Anthropic upstreams have no embeddings and are skipped; the mock returns deterministic unit vectors (8 dimensions unless `dimensions` says otherwise). Usage counts the input tokens.",
        security: CALLER_SECURITY,
      },
    },
  ),
)

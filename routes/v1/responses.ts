import { Elysia } from 'elysia'
import { upgradeRequired } from '../../src/errors'
import { rawBodyOf } from '../../src/http/body'
import { CALLER_SECURITY, callerAuth } from '../../src/http/caller'
import { unknownRoute } from '../../src/http/conventions'
import { ResponseSchema, ResponsesRequestSchema } from '../../src/http/responses-schemas'
import { defineRoute } from '../../src/http/route'
import { ErrorSchema } from '../../src/http/schemas'
import { recordOf } from '../../src/observe/request-record'
import { checkResponsesRequest, responsesExchange } from '../../src/serve/responses'
import { serve } from '../../src/serve/serve'
import type { ResponsesRequest } from '../../src/wire/openai-responses/types'

const ERRORS = {
  400: ErrorSchema,
  401: ErrorSchema,
  403: ErrorSchema,
  404: ErrorSchema,
  413: ErrorSchema,
  415: ErrorSchema,
  429: ErrorSchema,
  502: ErrorSchema,
}

export default defineRoute((gateway) =>
  new Elysia()
    // Codex tries a WebSocket first: 426 tells it at once to use SSE (a 404 would cost it five retries).
    .get(
      '',
      ({ request }) => {
        if (request.headers.get('upgrade')?.toLowerCase() === 'websocket')
          throw upgradeRequired('The Responses API is served over HTTP here: use SSE (`stream: true`)')
        throw unknownRoute('GET', '/v1/responses')
      },
      { detail: { hide: true } },
    )
    .use(callerAuth(gateway))
    .post(
      '',
      async ({ body, caller, request, set }) => {
        const responsesRequest = body as ResponsesRequest
        checkResponsesRequest(responsesRequest)
        gateway.holdConnection(request)
        const record = recordOf(request)
        record.messages = responsesRequest.input
        const previousId = responsesRequest.previous_response_id
        const previous = previousId ? await gateway.responses.previous(previousId, caller.key.id) : null
        const sent = responsesRequest.input
        responsesRequest.input = await gateway.responses.withReferencesResolved(sent, caller.key.id)
        const context = {
          keyId: caller.key.id,
          inputReplaced: responsesRequest.input !== sent,
          sealer: gateway.sealer,
          store: gateway.responses,
          previous,
          now: gateway.now,
          onRecordError: (error: unknown) => gateway.log.warn({ request_id: record.id, reason: (error as Error).message }, 'a response could not be stored'),
        }
        const call = { caller, clientSignal: request.signal, headers: set.headers, record, requestHeaders: request.headers }
        return serve(gateway.serving, call, responsesExchange(responsesRequest, rawBodyOf(request), context)) as Promise<Response>
      },
      {
        body: ResponsesRequestSchema,
        response: { 200: ResponseSchema, ...ERRORS, 503: ErrorSchema, 504: ErrorSchema },
        detail: {
          tags: ['Responses'],
          summary: 'Create a response (OpenAI Responses API)',
          description:
            "OpenAI's Responses API over the gateway's aliases (Codex CLI, the Agents SDK, the Vercel AI SDK's default provider). Native targets (`responses = \"native\"`) get the body as sent, only `model` replaced; every other target is translated through chat completions. With `stream: true` the answer is the `response.*` event stream; a stream the upstream breaks ends with `response.failed` and no `response.completed`. Responses are kept for `previous_response_id`, GET and DELETE unless `store` is false.",
          security: CALLER_SECURITY,
        },
      },
    ),
)

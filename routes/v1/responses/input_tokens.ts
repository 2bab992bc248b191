import { Elysia } from 'elysia'
import { rawBodyOf } from '../../../src/http/body'
import { CALLER_SECURITY, callerAuth } from '../../../src/http/caller'
import { InputTokensSchema, ResponsesRequestSchema } from '../../../src/http/responses-schemas'
import { defineRoute } from '../../../src/http/route'
import { ErrorSchema } from '../../../src/http/schemas'
import { recordOf } from '../../../src/observe/request-record'
import { countResponseInputTokens } from '../../../src/serve/responses-stored'
import type { ResponsesRequest } from '../../../src/wire/openai-responses/types'

export default defineRoute((gateway) =>
  new Elysia().use(callerAuth(gateway)).post(
    '',
    async ({ body, caller, request, set }) => {
      const responsesRequest = body as ResponsesRequest
      const call = { caller, clientSignal: request.signal, headers: set.headers, record: recordOf(request) }
      // The conversation it continues counts too (404 for an id this key does not have).
      const previousId = responsesRequest.previous_response_id
      const previous = previousId ? await gateway.responses.previous(previousId, caller.key.id) : null
      return (await countResponseInputTokens(gateway.serving, call, responsesRequest, rawBodyOf(request), previous)) as unknown as Response
    },
    {
      body: ResponsesRequestSchema,
      response: {
        200: InputTokensSchema,
        400: ErrorSchema,
        401: ErrorSchema,
        403: ErrorSchema,
        404: ErrorSchema,
        429: ErrorSchema,
        502: ErrorSchema,
        503: ErrorSchema,
      },
      detail: {
        tags: ['Responses'],
        summary: 'Count the input tokens of a response request',
        description:
          'A native target counts it itself; others count the request as translated for them (o200k, Anthropic, the mock). With `previous_response_id`, the conversation it continues counts too. Limited like any request, but not a request in usage.',
        security: CALLER_SECURITY,
      },
    },
  ),
)

import { Elysia } from 'elysia'
import type { ChatRequest } from '../../../src/wire/pivot/types'
import { checkChatRequest } from '../../../src/wire/openai-chat/validate'
import { CALLER_SECURITY, callerAuth } from '../../../src/http/caller'
import { rawBodyOf } from '../../../src/http/body'
import { recordOf } from '../../../src/observe/request-record'
import { defineRoute } from '../../../src/http/route'
import { chatExchange } from '../../../src/serve/chat'
import { serve } from '../../../src/serve/serve'
import { ChatCompletionSchema, ChatRequestSchema, ErrorSchema } from '../../../src/http/schemas'

export default defineRoute((gateway) =>
  new Elysia().use(callerAuth(gateway)).post(
    '',
    ({ body, caller, request, set }) => {
      const chatRequest = body as ChatRequest
      checkChatRequest(chatRequest)
      gateway.holdConnection(request)
      const record = recordOf(request)
      record.messages = chatRequest.messages
      const call = { caller, clientSignal: request.signal, headers: set.headers, record, requestHeaders: request.headers }
      return serve(gateway.serving, call, chatExchange(chatRequest, rawBodyOf(request))) as Promise<Response>
    },
    {
      body: ChatRequestSchema,
      response: {
        200: ChatCompletionSchema,
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
        tags: ['Chat'],
        summary: 'Create a chat completion',
        description:
          'OpenAI-compatible. `model` is a public alias from GET /v1/models. With `stream: true` the answer is a text/event-stream of `chat.completion.chunk` events ending with `data: [DONE]`; add `stream_options.include_usage` for a final usage chunk. A stream the upstream breaks ends with a `data: {"error":{...}}` event and no [DONE].',
        security: CALLER_SECURITY,
      },
    },
  ),
)

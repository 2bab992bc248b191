import { Elysia } from 'elysia'
import { CALLER_SECURITY, callerAuth } from '../../src/http/caller'
import { AnthropicErrorSchema, MessageSchema, MessagesRequestSchema } from '../../src/http/inbound-schemas'
import { rawBodyOf } from '../../src/http/body'
import { recordOf } from '../../src/observe/request-record'
import { defineRoute } from '../../src/http/route'
import { messagesExchange } from '../../src/serve/messages'
import { serve } from '../../src/serve/serve'
import type { MessagesRequest } from '../../src/wire/anthropic/types'
import { checkMessagesRequest } from '../../src/wire/anthropic/validate'

export default defineRoute((gateway) =>
  new Elysia().use(callerAuth(gateway)).post(
    '',
    async ({ body, caller, request, set }) => {
      const messagesRequest = body as MessagesRequest
      checkMessagesRequest(messagesRequest)
      gateway.holdConnection(request)
      const record = recordOf(request)
      record.messages = messagesRequest.messages
      const thread = await gateway.conversations.beginThread(messagesRequest, caller.key.id)
      const context = {
        headers: { version: request.headers.get('anthropic-version'), beta: request.headers.get('anthropic-beta') },
        requestId: record.id,
        signer: gateway.signer,
        thread,
        onRecordError: (error: unknown) =>
          gateway.log.warn({ request_id: record.id, reason: (error as Error).message }, 'a message thread turn could not be recorded'),
      }
      const call = { caller, clientSignal: request.signal, headers: set.headers, record, requestHeaders: request.headers }
      // A thread the gateway holds is claimed until this turn is recorded: whatever fails, it is let go.
      return serve(gateway.serving, call, messagesExchange(messagesRequest, rawBodyOf(request), context)).catch(async (error: unknown) => {
        await thread?.release()
        throw error
      }) as Promise<Response>
    },
    {
      body: MessagesRequestSchema,
      response: {
        200: MessageSchema,
        400: AnthropicErrorSchema,
        401: AnthropicErrorSchema,
        403: AnthropicErrorSchema,
        404: AnthropicErrorSchema,
        413: AnthropicErrorSchema,
        415: AnthropicErrorSchema,
        429: AnthropicErrorSchema,
        502: AnthropicErrorSchema,
        503: AnthropicErrorSchema,
        504: AnthropicErrorSchema,
      },
      detail: {
        tags: ['Messages'],
        summary: "Create a message (Anthropic's Messages API)",
        description:
          'Anthropic\'s Messages API, so the Anthropic SDK and Claude Code (ANTHROPIC_BASE_URL) work unchanged. `model` is a public alias from GET /v1/models. Keys go in `x-api-key` (as the Anthropic SDK sends them) or `Authorization: Bearer`. Anthropic upstreams get the body as sent, only `model` replaced, with the caller\'s `anthropic-version` and `anthropic-beta`; OpenAI-compatible and mock upstreams are translated both ways. With `stream: true` the answer is Anthropic\'s event stream; a stream the upstream breaks ends with `event: error` and no `message_stop`. Errors have Anthropic\'s shape `{"type":"error","error":{"type","message"}}`.',
        security: CALLER_SECURITY,
      },
    },
  ),
)

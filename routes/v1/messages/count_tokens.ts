import { Elysia, t } from 'elysia'
import { CALLER_SECURITY, callerAuth } from '../../../src/http/caller'
import { AnthropicErrorSchema, CountTokensRequestSchema } from '../../../src/http/inbound-schemas'
import { rawBodyOf } from '../../../src/http/body'
import { recordOf } from '../../../src/observe/request-record'
import { defineRoute } from '../../../src/http/route'
import { Int } from '../../../src/http/schemas'
import { countTokens } from '../../../src/serve/count-tokens'
import type { MessagesRequest } from '../../../src/wire/anthropic/types'
import { checkMessagesRequest } from '../../../src/wire/anthropic/validate'

export default defineRoute((gateway) =>
  new Elysia().use(callerAuth(gateway)).post(
    '',
    ({ body, caller, request, set }) => {
      const countRequest = body as MessagesRequest
      checkMessagesRequest(countRequest)
      const record = recordOf(request)
      const headers = { version: request.headers.get('anthropic-version'), beta: request.headers.get('anthropic-beta') }
      const call = { caller, clientSignal: request.signal, headers: set.headers, record }
      return countTokens(gateway.serving, call, countRequest, rawBodyOf(request), headers) as unknown as Promise<Response>
    },
    {
      body: CountTokensRequestSchema,
      response: {
        // noValidate: the count is written as JSON text; the schema documents it.
        200: t.Object({ input_tokens: Int() }, { title: 'TokenCount', noValidate: true }),
        400: AnthropicErrorSchema,
        401: AnthropicErrorSchema,
        403: AnthropicErrorSchema,
        404: AnthropicErrorSchema,
        429: AnthropicErrorSchema,
        502: AnthropicErrorSchema,
        503: AnthropicErrorSchema,
        504: AnthropicErrorSchema,
      },
      detail: {
        tags: ['Messages'],
        summary: 'Count the input tokens of a message',
        description:
          'Anthropic upstreams count it themselves; OpenAI-compatible ones with the o200k tokenizer (text, tool calls and tool definitions, 85 tokens per image), in a worker thread; the mock counts words. Needs a key, and counts against its limits like any request: it takes a place in the per-minute request window and a concurrency slot while it runs, and is refused (429 with Retry-After) when a limit is reached. It is not a request in usage: it records nothing, charges no tokens or spend, and does not use up the daily request quota.',
        security: CALLER_SECURITY,
      },
    },
  ),
)

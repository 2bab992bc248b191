import { type TSchema, Type } from '@sinclair/typebox'
import { t } from 'elysia'

/**
 * A JSON integer. Elysia's `t.Integer` also accepts strings like "5" and converts them (a transform
 * run on every request): right for query strings, wrong for a JSON API, which must refuse them.
 */
export const Int = (options?: Parameters<typeof Type.Integer>[0]) => Type.Integer(options)

/** The one error body, as documented in the OpenAPI document. */
export const ErrorSchema = t.Object(
  {
    error: t.Object({
      message: t.String(),
      type: t.String({ examples: ['invalid_request_error', 'authentication_error', 'not_found_error', 'rate_limit_error'] }),
      param: t.Union([t.String(), t.Null()]),
      code: t.Union([t.String(), t.Null()]),
    }),
  },
  { title: 'Error' },
)

export const ModelSchema = t.Object(
  {
    id: t.String({ examples: ['local/echo'] }),
    object: t.Literal('model'),
    created: Int(),
    owned_by: t.String({ examples: ['local'] }),
  },
  { title: 'Model' },
)

export const AnthropicModelSchema = t.Object(
  {
    type: t.Literal('model'),
    id: t.String({ examples: ['anthropic/fast'] }),
    display_name: t.String(),
    created_at: t.String({ description: 'RFC 3339' }),
  },
  { title: 'AnthropicModel' },
)

export const AnthropicModelListSchema = t.Object(
  {
    data: t.Array(AnthropicModelSchema),
    has_more: t.Boolean(),
    first_id: t.Union([t.String(), t.Null()]),
    last_id: t.Union([t.String(), t.Null()]),
  },
  { title: 'AnthropicModelList' },
)

const MessageSchema = t.Object(
  {},
  {
    additionalProperties: true,
    description:
      'A message: `role` (system, developer, user, assistant, tool, or the legacy function) and `content`: a string, null (an assistant message with `tool_calls`), or an array of parts, each an object with a string `type` (text, image_url, input_audio, file, refusal; other types pass to OpenAI-compatible upstreams as sent). Assistant messages may carry `tool_calls`, `thinking_blocks`; tool messages `tool_call_id`.',
    error: 'Invalid request: each message must be an object',
  },
)

const nullable = <T extends TSchema>(schema: T, error: string) => t.Optional(t.Union([schema, t.Null()], { error }))

/**
 * OpenAI's chat completion request: every body OpenAI's published schema accepts passes (its numeric
 * fields are nullable there, so they are here). Message structure is checked field by field after
 * this (wire/openai/validate.ts), so a refusal names the exact path. Fields not listed pass on to
 * OpenAI-compatible upstreams untouched.
 */
export const ChatRequestSchema = t.Object(
  {
    model: t.String({
      minLength: 1,
      error: 'Invalid request: model is required and must be a non-empty string naming a model from GET /v1/models',
      examples: ['local/echo'],
    }),
    messages: t.Array(MessageSchema, { minItems: 1, error: 'Invalid request: messages is required and must be a non-empty array of messages' }),
    temperature: nullable(t.Number({ minimum: 0, maximum: 2 }), 'Invalid request: temperature must be a number from 0 to 2'),
    top_p: nullable(t.Number({ minimum: 0, maximum: 1 }), 'Invalid request: top_p must be a number from 0 to 1'),
    max_tokens: nullable(Int(), 'Invalid request: max_tokens must be an integer'),
    max_completion_tokens: nullable(Int(), 'Invalid request: max_completion_tokens must be an integer'),
    stream: nullable(t.Boolean(), 'Invalid request: stream must be a boolean'),
    stream_options: nullable(
      t.Object({ include_usage: t.Optional(t.Boolean()) }, { additionalProperties: true }),
      'Invalid request: stream_options must be an object like {"include_usage": true}',
    ),
  },
  { additionalProperties: true, title: 'ChatCompletionRequest' },
)

const UsageSchema = t.Object({ prompt_tokens: Int(), completion_tokens: Int(), total_tokens: Int() }, { additionalProperties: true })

export const ChatCompletionSchema = t.Object(
  {
    id: t.String(),
    object: t.Literal('chat.completion'),
    created: Int(),
    model: t.String({ description: 'The alias that was asked for; the upstream model is in the x-svc-model header.' }),
    choices: t.Array(
      t.Object({
        index: Int(),
        message: t.Object({ role: t.Literal('assistant'), content: t.Union([t.String(), t.Null()]) }, { additionalProperties: true }),
        finish_reason: t.Union([t.String(), t.Null()]),
      }),
    ),
    usage: UsageSchema,
  },
  // noValidate: the gateway relays the upstream's completion as a serialized string; the schema documents it.
  { title: 'ChatCompletion', additionalProperties: true, noValidate: true },
)

/** The usage counters, as every usage report shows them. */
export const UsageCounterFields = {
  requests: Int(),
  errors: Int(),
  prompt_tokens: Int(),
  completion_tokens: Int(),
  total_tokens: Int(),
  cost_usd: t.Number({ description: 'Spend in USD: the sum of each request’s exact cost, to the nano-dollar' }),
  cache_saved_usd: t.Number({ description: 'What response cache hits saved, in USD: the cost of the answers they repeated (a hit itself costs nothing)' }),
}

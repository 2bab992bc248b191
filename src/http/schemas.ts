import { Type } from '@sinclair/typebox'
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
      code: t.Optional(t.Union([t.String(), t.Null()])),
      param: t.Optional(t.Union([t.String(), t.Null()])),
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

const ROLES = ['system', 'user', 'assistant', 'developer', 'tool'] as const

const MessageSchema = t.Object(
  {
    role: t.Union(
      ROLES.map((role) => t.Literal(role)),
      { error: `Invalid request: messages[].role must be one of ${ROLES.join(', ')}` },
    ),
    content: t.Union([t.String(), t.Array(t.Object({ type: t.Literal('text'), text: t.String() }, { additionalProperties: true })), t.Null()], {
      error: 'Invalid request: messages[].content must be a string or an array of text parts',
    }),
  },
  { additionalProperties: true },
)

/** OpenAI's chat completion request. Fields not listed pass on to OpenAI-compatible upstreams untouched. */
export const ChatRequestSchema = t.Object(
  {
    model: t.String({
      minLength: 1,
      error: 'Invalid request: model is required and must be a non-empty string naming a model from GET /v1/models',
      examples: ['local/echo'],
    }),
    messages: t.Array(MessageSchema, { minItems: 1, error: 'Invalid request: messages is required and must be a non-empty array of messages' }),
    temperature: t.Optional(t.Number({ minimum: 0, maximum: 2, error: 'Invalid request: temperature must be a number from 0 to 2' })),
    top_p: t.Optional(t.Number({ minimum: 0, maximum: 1, error: 'Invalid request: top_p must be a number from 0 to 1' })),
    max_tokens: t.Optional(Int({ minimum: 1, error: 'Invalid request: max_tokens must be a positive integer' })),
    max_completion_tokens: t.Optional(Int({ minimum: 1, error: 'Invalid request: max_completion_tokens must be a positive integer' })),
    stream: t.Optional(t.Boolean({ error: 'Invalid request: stream must be a boolean' })),
    stream_options: t.Optional(
      t.Union([t.Object({ include_usage: t.Optional(t.Boolean()) }, { additionalProperties: true }), t.Null()], {
        error: 'Invalid request: stream_options must be an object like {"include_usage": true}',
      }),
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
}

import { t } from 'elysia'
import { Int } from './schemas'

/** Anthropic's error body, as every /v1/messages* route answers errors. */
export const AnthropicErrorSchema = t.Object(
  {
    type: t.Literal('error'),
    error: t.Object({
      type: t.String({ examples: ['invalid_request_error', 'authentication_error', 'not_found_error', 'rate_limit_error', 'api_error', 'overloaded_error'] }),
      message: t.String(),
    }),
  },
  { title: 'AnthropicError' },
)

const Block = t.Object(
  {},
  {
    additionalProperties: true,
    description:
      'A content block with a string `type`: text, image (`source` base64 or url), document (PDF base64, plain text or url), tool_use, tool_result, thinking, redacted_thinking; `cache_control` allowed. Other types pass to Anthropic upstreams as sent.',
  },
)

/** Fresh schemas per use: Elysia rewrites a route's schema objects in place when it compiles them. */
const messagesFields = () => ({
  model: t.String({
    minLength: 1,
    error: 'Invalid request: model is required and must be a non-empty string naming a model from GET /v1/models',
    examples: ['local/echo'],
  }),
  messages: t.Array(
    t.Object(
      { role: t.String({ description: 'user or assistant' }), content: t.Union([t.String(), t.Array(Block)]) },
      { additionalProperties: true, error: 'Invalid request: each message must be an object with role and content' },
    ),
    // Empty only for a thread's continue (checked after the schema): e.g. the turn after a pause_turn.
    { error: 'Invalid request: messages is required and must be an array of messages' },
  ),
  system: t.Optional(t.Union([t.String(), t.Array(Block)], { error: 'Invalid request: system must be a string or an array of text blocks' })),
  tools: t.Optional(t.Array(t.Object({ name: t.String() }, { additionalProperties: true }), { error: 'Invalid request: tools must be an array of tools' })),
  tool_choice: t.Optional(t.Object({ type: t.String() }, { additionalProperties: true, error: 'Invalid request: tool_choice must be an object with a type' })),
  thinking: t.Optional(t.Object({ type: t.String() }, { additionalProperties: true, error: 'Invalid request: thinking must be an object with a type' })),
})

/** Anthropic's Messages request. Fields not listed pass on to Anthropic upstreams as sent. */
export const MessagesRequestSchema = t.Object(
  {
    ...messagesFields(),
    max_tokens: Int({ minimum: 1, error: 'Invalid request: max_tokens is required and must be a positive integer' }),
    stream: t.Optional(t.Boolean({ error: 'Invalid request: stream must be a boolean' })),
    temperature: t.Optional(t.Number({ minimum: 0, maximum: 1, error: 'Invalid request: temperature must be a number from 0 to 1' })),
    top_p: t.Optional(t.Number({ minimum: 0, maximum: 1, error: 'Invalid request: top_p must be a number from 0 to 1' })),
    top_k: t.Optional(Int({ minimum: 0, error: 'Invalid request: top_k must be a non-negative integer' })),
    stop_sequences: t.Optional(t.Array(t.String(), { error: 'Invalid request: stop_sequences must be an array of strings' })),
    metadata: t.Optional(t.Object({ user_id: t.Optional(t.String()) }, { additionalProperties: true })),
  },
  { additionalProperties: true, title: 'MessagesRequest' },
)

/** The token-count request: a Messages request without max_tokens. */
export const CountTokensRequestSchema = t.Object(messagesFields(), { additionalProperties: true, title: 'CountTokensRequest' })

export const MessageSchema = t.Object(
  {
    id: t.String(),
    type: t.Literal('message'),
    role: t.Literal('assistant'),
    model: t.String({ description: 'The alias that was asked for; the upstream model is in the x-svc-model header.' }),
    content: t.Array(Block),
    stop_reason: t.Union([t.String(), t.Null()]),
    stop_sequence: t.Union([t.String(), t.Null()]),
    usage: t.Object(
      { input_tokens: Int(), output_tokens: Int(), cache_read_input_tokens: t.Optional(Int()), cache_creation_input_tokens: t.Optional(Int()) },
      { additionalProperties: true },
    ),
  },
  // noValidate: the answer is relayed (or translated) as text; the schema documents it.
  { title: 'Message', additionalProperties: true, noValidate: true },
)

const TokenArray = t.Array(Int(), { minItems: 1 })

/** OpenAI's embeddings request. */
export const EmbeddingsRequestSchema = t.Object(
  {
    model: t.String({
      minLength: 1,
      error: 'Invalid request: model is required and must be a non-empty string naming a model from GET /v1/models',
      examples: ['local/embed'],
    }),
    input: t.Union([t.String(), t.Array(t.String(), { minItems: 1 }), TokenArray, t.Array(TokenArray, { minItems: 1 })], {
      error: 'Invalid request: input must be a string, an array of strings, an array of tokens or an array of token arrays',
    }),
    encoding_format: t.Optional(t.Union([t.Literal('float'), t.Literal('base64')], { error: 'Invalid request: encoding_format must be float or base64' })),
    dimensions: t.Optional(Int({ minimum: 1, error: 'Invalid request: dimensions must be a positive integer' })),
    user: t.Optional(t.String()),
  },
  { additionalProperties: true, title: 'EmbeddingsRequest' },
)

export const EmbeddingsResponseSchema = t.Object(
  {
    object: t.Literal('list'),
    data: t.Array(t.Object({ object: t.Literal('embedding'), index: Int(), embedding: t.Union([t.Array(t.Number()), t.String()]) })),
    model: t.String(),
    usage: t.Object({ prompt_tokens: Int(), total_tokens: Int() }),
  },
  { title: 'Embeddings', additionalProperties: true, noValidate: true },
)

import { t } from 'elysia'

/**
 * OpenAI's Responses API request: `model` is checked here, the rest by the translation (which names
 * the exact path of what it cannot carry). Fields not listed pass on to native targets untouched.
 */
export const ResponsesRequestSchema = t.Object(
  {
    model: t.String({
      minLength: 1,
      error: 'Invalid request: model is required and must be a non-empty string naming a model from GET /v1/models',
      examples: ['local/echo'],
    }),
    input: t.Optional(
      t.Union([t.String(), t.Array(t.Object({}, { additionalProperties: true }))], {
        error: 'Invalid request: input must be a string or an array of input items',
      }),
    ),
    instructions: t.Optional(t.Union([t.String(), t.Null()], { error: 'Invalid request: instructions must be a string' })),
    stream: t.Optional(t.Union([t.Boolean(), t.Null()], { error: 'Invalid request: stream must be a boolean' })),
    store: t.Optional(t.Union([t.Boolean(), t.Null()], { error: 'Invalid request: store must be a boolean' })),
    previous_response_id: t.Optional(t.Union([t.String({ minLength: 1 }), t.Null()], { error: 'Invalid request: previous_response_id must be a response id' })),
  },
  { additionalProperties: true, title: 'CreateResponse' },
)

// noValidate: answers are serialized strings (relayed or translated); the schemas document them.
export const ResponseSchema = t.Object(
  {
    id: t.String({ examples: ['resp_0123'] }),
    object: t.Literal('response'),
    created_at: t.Number(),
    status: t.String({ examples: ['completed', 'incomplete', 'failed'] }),
    model: t.String({ description: 'The alias asked for; the upstream model is in the x-svc-model header.' }),
    output: t.Array(t.Object({}, { additionalProperties: true })),
    usage: t.Optional(t.Object({}, { additionalProperties: true })),
  },
  { title: 'Response', additionalProperties: true, noValidate: true },
)

export const ResponseDeletedSchema = t.Object(
  { id: t.String(), object: t.Literal('response'), deleted: t.Boolean() },
  { title: 'ResponseDeleted', noValidate: true },
)

export const ResponseItemListSchema = t.Object(
  {
    object: t.Literal('list'),
    data: t.Array(t.Object({}, { additionalProperties: true })),
    first_id: t.Union([t.String(), t.Null()]),
    last_id: t.Union([t.String(), t.Null()]),
    has_more: t.Boolean(),
  },
  { title: 'ResponseItemList', noValidate: true },
)

export const InputTokensSchema = t.Object(
  { object: t.Literal('response.input_tokens'), input_tokens: t.Integer() },
  { title: 'ResponseInputTokens', noValidate: true },
)

import { Elysia } from 'elysia'
import { defineRoute } from '../../../src/http/route'
import { ErrorSchema, ModelSchema } from '../../../src/http/schemas'
import { resolveAlias } from '../../../src/routing/table'

export default defineRoute((gateway) =>
  new Elysia().get(
    '',
    // `local/echo` arrives as two segments, or as one `local%2Fecho` from the OpenAI SDK's models.retrieve().
    ({ params }) => resolveAlias(gateway.routing, decodeURIComponent((params as Record<string, string>)['*'] ?? '')).model,
    {
      response: { 200: ModelSchema, 404: ErrorSchema },
      detail: {
        tags: ['Models'],
        summary: 'Retrieve one model alias',
        description: 'Path is `/v1/models/{prefix}/{name}`, or `/v1/models/{prefix}%2F{name}` as the OpenAI SDK sends it.',
      },
    },
  ),
)

import { Elysia, t } from 'elysia'
import { defineRoute } from '../../src/http/route'
import { AnthropicModelListSchema, ModelSchema } from '../../src/http/schemas'
import { anthropicModelList } from '../../src/wire/anthropic/models'

export default defineRoute((gateway) =>
  new Elysia().get(
    '',
    ({ request }) =>
      // Anthropic's clients (Claude Code's model picker) send anthropic-version and read Anthropic's list.
      request.headers.has('anthropic-version') ? anthropicModelList(gateway.routing.models) : { object: 'list' as const, data: gateway.routing.models },
    {
      response: { 200: t.Union([t.Object({ object: t.Literal('list'), data: t.Array(ModelSchema) }), AnthropicModelListSchema]) },
      detail: {
        tags: ['Models'],
        summary: 'List public model aliases',
        description:
          "Every alias, in OpenAI's list shape; with an `anthropic-version` header, in Anthropic's (`data[]` of `{type, id, display_name, created_at}`, `has_more`, `first_id`, `last_id`). No key needed.",
      },
    },
  ),
)

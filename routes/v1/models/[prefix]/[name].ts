import { Elysia, t } from 'elysia'
import { defineRoute } from '../../../../src/http/route'
import { AnthropicModelSchema, ErrorSchema, ModelSchema } from '../../../../src/http/schemas'
import { modelRecord } from '../../../../src/http/model-record'
import { resolveAlias } from '../../../../src/routing/table'

export default defineRoute((gateway) =>
  new Elysia().get('', ({ params, request }) => modelRecord(resolveAlias(gateway.routing, `${params.prefix}/${params.name}`).model, request), {
    params: t.Object({
      prefix: t.String({ description: 'The alias before its slash, e.g. `local`', examples: ['local'] }),
      name: t.String({ description: 'The alias after its slash, e.g. `echo`', examples: ['echo'] }),
    }),
    response: { 200: t.Union([ModelSchema, AnthropicModelSchema]), 404: ErrorSchema },
    detail: {
      tags: ['Models'],
      summary: 'Retrieve one model alias',
      description:
        "The alias `local/echo` is `GET /v1/models/local/echo`; `GET /v1/models/local%2Fecho`, as the OpenAI SDK's `models.retrieve()` sends it, answers the same. With an `anthropic-version` header, Anthropic's model record. No key needed.",
    },
  }),
)

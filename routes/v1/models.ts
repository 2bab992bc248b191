import { Elysia, t } from 'elysia'
import { defineRoute } from '../../src/http/route'
import { ModelSchema } from '../../src/http/schemas'

export default defineRoute((gateway) =>
  new Elysia().get('', () => ({ object: 'list' as const, data: gateway.routing.models }), {
    response: { 200: t.Object({ object: t.Literal('list'), data: t.Array(ModelSchema) }) },
    detail: { tags: ['Models'], summary: 'List public model aliases', description: 'Every alias, OpenAI list shape. No key needed.' },
  }),
)

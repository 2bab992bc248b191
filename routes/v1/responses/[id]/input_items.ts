import { Elysia, t } from 'elysia'
import { invalidRequest } from '../../../../src/errors'
import { CALLER_SECURITY, callerAuth } from '../../../../src/http/caller'
import { ResponseItemListSchema } from '../../../../src/http/responses-schemas'
import { defineRoute } from '../../../../src/http/route'
import { ErrorSchema } from '../../../../src/http/schemas'
import { listInputItems } from '../../../../src/serve/responses-stored'

export default defineRoute((gateway) =>
  new Elysia().use(callerAuth(gateway)).get(
    '',
    async ({ params, query, caller, request, set }) => {
      const limit = query.limit === undefined ? 20 : Number(query.limit)
      if (!Number.isInteger(limit) || limit < 1 || limit > 100)
        throw invalidRequest('Invalid request: limit must be a whole number from 1 to 100', { param: 'limit' })
      const order = query.order ?? 'desc'
      if (order !== 'asc' && order !== 'desc') throw invalidRequest('Invalid request: order must be "asc" or "desc"', { param: 'order' })
      const context = { store: gateway.responses, routing: () => gateway.routing, keyId: caller.key.id, signal: request.signal }
      const at = request.url.indexOf('?')
      set.headers['content-type'] = 'application/json'
      const include = ([] as string[]).concat((query as Record<string, string | string[] | undefined>)['include[]'] ?? query.include ?? [])
      const page = { after: query.after, limit, order } as const
      return (await listInputItems(context, params.id, page, at === -1 ? '' : request.url.slice(at), include)) as unknown as Response
    },
    {
      params: t.Object({ id: t.String() }),
      query: t.Object(
        {
          after: t.Optional(t.String()),
          limit: t.Optional(t.String()),
          order: t.Optional(t.String()),
          include: t.Optional(t.Union([t.String(), t.Array(t.String())])),
        },
        { additionalProperties: true },
      ),
      response: { 200: ResponseItemListSchema, 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 502: ErrorSchema },
      detail: {
        tags: ['Responses'],
        summary: "List a stored response's input items",
        description:
          'The items the response was made from (with `previous_response_id`, the earlier turns’ input and output items too), `limit` (1 to 100, default 20) at a time after `after`, in `order` (`desc` by default). `include[]=reasoning.encrypted_content` adds the sealed reasoning.',
        security: CALLER_SECURITY,
      },
    },
  ),
)

import { Elysia, t } from 'elysia'
import { CALLER_SECURITY, callerAuth } from '../../../src/http/caller'
import { ResponseDeletedSchema, ResponseSchema } from '../../../src/http/responses-schemas'
import { defineRoute } from '../../../src/http/route'
import { ErrorSchema } from '../../../src/http/schemas'
import { deleteResponse, retrieveResponse } from '../../../src/serve/responses-stored'

/** The caller's query string as sent (include[] and the like go on to a holding upstream as they came). */
const queryOf = (request: Request) => {
  const at = request.url.indexOf('?')
  return at === -1 ? '' : request.url.slice(at)
}

export default defineRoute((gateway) =>
  new Elysia()
    .use(callerAuth(gateway))
    .get(
      '',
      async ({ params, query, caller, request, set }) => {
        const include = ([] as string[]).concat((query as Record<string, string | string[] | undefined>)['include[]'] ?? query.include ?? [])
        const context = { store: gateway.responses, routing: () => gateway.routing, keyId: caller.key.id, signal: request.signal }
        set.headers['content-type'] = 'application/json'
        return (await retrieveResponse(context, params.id, include, queryOf(request))) as unknown as Response
      },
      {
        params: t.Object({ id: t.String({ description: 'A response id, `resp_…`' }) }),
        response: { 200: ResponseSchema, 401: ErrorSchema, 404: ErrorSchema, 502: ErrorSchema },
        detail: {
          tags: ['Responses'],
          summary: 'Retrieve a stored response',
          description:
            "A response the calling key made (another key's is 404). `include[]=reasoning.encrypted_content` adds the sealed reasoning. A response a native upstream holds is fetched from it.",
          security: CALLER_SECURITY,
        },
      },
    )
    .delete(
      '',
      async ({ params, caller, request, set }) => {
        const context = { store: gateway.responses, routing: () => gateway.routing, keyId: caller.key.id, signal: request.signal }
        set.headers['content-type'] = 'application/json'
        return (await deleteResponse(context, params.id)) as unknown as Response
      },
      {
        params: t.Object({ id: t.String() }),
        response: { 200: ResponseDeletedSchema, 401: ErrorSchema, 404: ErrorSchema, 502: ErrorSchema },
        detail: { tags: ['Responses'], summary: 'Delete a stored response', description: "The calling key's own responses only.", security: CALLER_SECURITY },
      },
    ),
)

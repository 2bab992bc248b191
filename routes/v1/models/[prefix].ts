import { Elysia, t } from 'elysia'
import { defineRoute } from '../../../src/http/route'
import { modelRecord } from '../../../src/http/model-record'
import { resolveAlias } from '../../../src/routing/table'

/**
 * `GET /v1/models/local%2Fecho`: the whole alias in one segment, as the OpenAI SDK's
 * `models.retrieve('local/echo')` sends it. The router names the segment `prefix` because the
 * two-segment route shares its position; here it holds the whole decoded alias. Documented under
 * `/v1/models/{prefix}/{name}`.
 */
export default defineRoute((gateway) =>
  new Elysia().get('', ({ params, request }) => modelRecord(resolveAlias(gateway.routing, params.prefix).model, request), {
    params: t.Object({ prefix: t.String() }),
    detail: { hide: true },
  }),
)

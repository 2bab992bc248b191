import { t } from 'elysia'
import { geminiRoute } from '../../../src/http/gemini-route'
import { defineRoute } from '../../../src/http/route'

/**
 * `POST /v1beta/models/{model}:{method}` with the model in one segment: an alias written with its
 * slash encoded (`local%2Fecho:generateContent`), or a name without a slash (404 model_not_found).
 * The parameter is named `prefix` as in `[prefix]/[action].ts`: the router wants one name per place.
 * Documented under `/v1beta/models/{prefix}/{action}`.
 */
export default defineRoute((gateway) =>
  geminiRoute(gateway, { params: t.Object({ prefix: t.String() }), nameOf: (params) => ({ prefix: null, segment: params.prefix! }), hide: true }),
)

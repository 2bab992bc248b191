import { Elysia } from 'elysia'
import { extractApiKey } from '../src/auth/authenticate'
import { unauthorized } from '../src/errors'
import { secretMatches } from '../src/http/admin'
import { defineRoute } from '../src/http/route'
import { ErrorSchema } from '../src/http/schemas'

export default defineRoute((gateway) =>
  new Elysia().get(
    '',
    ({ request }) => {
      const key = gateway.env.metricsKey
      if (key !== null && !secretMatches(extractApiKey(request.headers), key)) throw unauthorized()
      return new Response(gateway.metrics.text(), { headers: { 'content-type': gateway.metrics.contentType } })
    },
    {
      response: { 401: ErrorSchema },
      detail: {
        tags: ['Service'],
        summary: 'Prometheus metrics',
        description:
          'Prometheus text format, names prefixed `chatgate_`. Public unless GATEWAY_METRICS_KEY is set; then that key is required (Bearer or x-api-key).',
      },
    },
  ),
)

import { Elysia, t } from 'elysia'
import { CALLER_SECURITY, callerAuth } from '../../src/http/caller'
import { defineRoute } from '../../src/http/route'
import { ErrorSchema, Int, UsageCounterFields as Counters } from '../../src/http/schemas'
import { usageRange } from '../../src/usage/reports'

const UsageSchema = t.Object(
  {
    object: t.Literal('usage'),
    from: t.String(),
    to: t.String(),
    totals: t.Object(Counters),
    data: t.Array(t.Object({ date: t.String(), alias: t.String(), upstream: t.String(), ...Counters, latency_ms_sum: Int() })),
  },
  { title: 'Usage' },
)

export default defineRoute((gateway) =>
  new Elysia().use(callerAuth(gateway)).get(
    '',
    async ({ caller, query }) => {
      const range = usageRange(query.from, query.to, gateway.now())
      const { totals, data } = await gateway.reports.report({ keyId: caller.key.id, ...range })
      return {
        object: 'usage' as const,
        ...range,
        totals,
        data: data.map(({ key_id: _id, key_prefix: _prefix, ...row }) => row),
      }
    },
    {
      query: t.Object({
        from: t.Optional(t.String({ description: 'First UTC day, YYYY-MM-DD (default today)' })),
        to: t.Optional(t.String({ description: 'Last UTC day, YYYY-MM-DD, inclusive (default today)' })),
      }),
      response: { 200: UsageSchema, 400: ErrorSchema, 401: ErrorSchema },
      detail: {
        tags: ['Usage'],
        summary: "The calling key's own usage counters",
        description: 'Per UTC day, alias and upstream: requests, errors, tokens and summed latency, with totals.',
        security: CALLER_SECURITY,
      },
    },
  ),
)

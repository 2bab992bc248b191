import { Elysia, t } from 'elysia'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../src/http/admin'
import { ErrorSchema, Int } from '../../src/http/schemas'
import { targetKey } from '../../src/routing/circuit'

const AliasSchema = t.Object({
  name: t.String(),
  strategy: t.String(),
  targets: t.Array(
    t.Object({
      upstream: t.String(),
      model: t.String(),
      weight: Int(),
      circuit: t.Union([t.Literal('closed'), t.Literal('open'), t.Literal('half_open')]),
    }),
  ),
})

export default defineAdminRoute((gateway) =>
  new Elysia().use(adminAuth(gateway)).get(
    '',
    () => {
      const now = gateway.now()
      return {
        data: [...gateway.routing.aliases.values()].map((alias) => ({
          name: alias.name,
          strategy: alias.strategy,
          targets: alias.targets.map((target) => ({
            upstream: target.upstream.name,
            model: target.model,
            weight: target.weight,
            circuit: gateway.circuits.state(targetKey(target), target.upstream, now),
          })),
        })),
      }
    },
    {
      response: { 200: t.Object({ data: t.Array(AliasSchema) }), 401: ErrorSchema, 429: ErrorSchema },
      detail: { tags: ['Admin'], summary: 'Aliases with their targets and live circuit state', security: ADMIN_SECURITY },
    },
  ),
)

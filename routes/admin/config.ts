import { Elysia, t } from 'elysia'
import { configStatus } from '../../src/gateway-config'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../src/http/admin'
import { ErrorSchema, Int } from '../../src/http/schemas'

const Hash = t.String({ description: 'SHA-256 (hex) of a config file as read' })

const ConfigStatusSchema = t.Object(
  {
    in_force: t.Object({
      version: Int({ description: 'Goes up with every start or reload, on any instance' }),
      hash: t.Union([Hash, t.Null()], { description: 'The file that wrote it; null: written by a version that kept no hash' }),
      source: t.String({ description: 'That file, as the instance that wrote it named it (or "built-in defaults")' }),
      written_at: t.Union([t.String(), t.Null()]),
    }),
    file: t.Object({ source: t.String(), hash: Hash }, { description: "This instance's own config file, as it last read it (start or reload)" }),
    in_sync: t.Boolean({ description: "Whether this instance's file says what the config in force says" }),
    differences: t.Array(
      t.Object({
        entry: t.String({ description: 'As the config file names it, e.g. `tiers.free.requests_per_minute`, `aliases."openai/fast"`' }),
        change: t.Union([t.Literal('added'), t.Literal('removed'), t.Literal('changed')], {
          description: "From this instance's file to the config in force: `removed` is in the file only, `added` in force only",
        }),
        from: t.Optional(t.Unknown({ description: "The value in this instance's file" })),
        to: t.Optional(t.Unknown({ description: 'The value in force' })),
        text: t.String({ description: 'One line, e.g. `tiers.free.requests_per_minute 20 → 30`' }),
      }),
    ),
    rule: t.String({ description: 'Which file wins' }),
  },
  { title: 'ConfigStatus' },
)

export default defineAdminRoute((gateway) =>
  new Elysia().use(adminAuth(gateway)).get('', () => configStatus(gateway), {
    response: { 200: ConfigStatusSchema, 401: ErrorSchema, 429: ErrorSchema },
    detail: {
      tags: ['Admin'],
      summary: "The config in force, this instance's own file, and where they differ",
      description:
        'The last instance to start or reload writes its file as the config in force; every instance on the database follows it within a second. An instance whose file differs keeps serving the config in force, logs a warning naming the entries, and lists them here.',
      security: ADMIN_SECURITY,
    },
  }),
)

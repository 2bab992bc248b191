import { t } from 'elysia'
import { geminiRoute } from '../../../../src/http/gemini-route'
import { defineRoute } from '../../../../src/http/route'

/** `POST /v1beta/models/{prefix}/{name}:{method}`: the alias's slash splits the path, `{name}:{method}` is one segment (src/http/gemini-route.ts). */
export default defineRoute((gateway) =>
  geminiRoute(gateway, {
    params: t.Object({
      prefix: t.String({ description: 'The alias before its slash, e.g. `local`', examples: ['local'] }),
      action: t.String({
        description: 'The alias after its slash, a colon and the method: `generateContent`, `streamGenerateContent` (with `?alt=sse`) or `countTokens`',
        examples: ['echo:generateContent'],
      }),
    }),
    nameOf: (params) => ({ prefix: params.prefix!, segment: params.action! }),
  }),
)

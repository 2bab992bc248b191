import { dirname, join } from 'node:path'
import { Elysia, t } from 'elysia'
import { unknownRoute } from '../../../src/http/conventions'
import { defineRoute } from '../../../src/http/route'
import { ROOT } from '../../../src/root'

/** Swagger UI's own files, served locally so /swagger renders on a machine with no internet. */
const ASSETS = new Map([
  ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ['swagger-ui.css', 'text/css; charset=utf-8'],
])
const DIST = dirname(Bun.resolveSync('swagger-ui-dist/package.json', ROOT))

export default defineRoute(() =>
  new Elysia().get(
    '',
    ({ params }) => {
      const type = ASSETS.get(params.file)
      if (!type) throw unknownRoute('GET', `/swagger/assets/${params.file}`)
      return new Response(Bun.file(join(DIST, params.file)), {
        headers: { 'content-type': type, 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' },
      })
    },
    { params: t.Object({ file: t.String() }), detail: { hide: true } },
  ),
)

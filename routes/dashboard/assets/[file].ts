import { dirname, join } from 'node:path'
import { Elysia, t } from 'elysia'
import { defineAdminRoute } from '../../../src/http/admin'
import { unknownRoute } from '../../../src/http/conventions'
import { fromRoot, ROOT } from '../../../src/root'

const UPLOT = join(dirname(Bun.resolveSync('uplot/package.json', ROOT)), 'dist')
const OWN = fromRoot('src/dashboard')

/** The dashboard's files, all from this origin: the page works with no internet. A Map: names like `constructor` are not files. */
const ASSETS = new Map([
  ['uPlot.iife.min.js', { path: join(UPLOT, 'uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' }],
  ['uPlot.min.css', { path: join(UPLOT, 'uPlot.min.css'), type: 'text/css; charset=utf-8' }],
  ...['dashboard.js', 'api.js', 'keys.js', 'requests.js'].map((name) => [name, { path: join(OWN, name), type: 'text/javascript; charset=utf-8' }] as const),
  ['dashboard.css', { path: join(OWN, 'dashboard.css'), type: 'text/css; charset=utf-8' }],
])

export default defineAdminRoute(() =>
  new Elysia().get(
    '',
    ({ params }) => {
      const asset = ASSETS.get(params.file)
      if (!asset) throw unknownRoute('GET', `/dashboard/assets/${params.file}`)
      return new Response(Bun.file(asset.path), { headers: { 'content-type': asset.type, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' } })
    },
    { params: t.Object({ file: t.String() }), detail: { hide: true } },
  ),
)

/**
 * Writes src/route-table.ts: every file under routes/ imported by name, with the path it serves, so
 * the gateway mounts its routes without reading the folder at start, and a bundle (scripts/build.ts)
 * holds them. `bun run build` runs it first; a test fails when the table is stale.
 */
import { relative } from 'node:path'
import { discoverRoutes, ROUTES_DIR } from '../src/http/routes-loader'
import { fromRoot } from '../src/root'

export const ROUTE_TABLE_FILE = fromRoot('src/route-table.ts')

/** The table's source text for the route files under routes/ now. */
export function routeTableSource(): string {
  const routes = discoverRoutes(ROUTES_DIR)
  const imports = routes.map((route, i) => `import route${i} from '${relative(fromRoot('src'), route.file).replace(/\.ts$/, '')}'`)
  const rows = routes.map((route, i) => `  { path: '${route.path}', factory: route${i} },`)
  return [
    '// Written by `bun scripts/route-table.ts` from the files under routes/ (their paths as the folder gives them). Do not edit by hand.',
    "import type { MountedRoute } from './http/routes-loader'",
    ...imports,
    '',
    'export const ROUTE_TABLE: MountedRoute[] = [',
    ...rows,
    ']',
    '',
  ].join('\n')
}

if (import.meta.main) await Bun.write(ROUTE_TABLE_FILE, routeTableSource())

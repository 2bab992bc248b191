import { Elysia } from 'elysia'
import type { Gateway } from '../gateway'
import { fromRoot } from '../root'
import type { RouteFactory } from './route'

/** The gateway's route files. */
export const ROUTES_DIR = fromRoot('routes')

export interface RouteFile {
  /** URL path pattern in Elysia's syntax, e.g. "/v1/models/*". */
  path: string
  file: string
}

/** routes/v1/models/[...id].ts -> /v1/models/*, routes/keys/[id].ts -> /keys/:id, routes/index.ts -> / */
export function toElysiaPath(routerPath: string): string {
  return routerPath.replace(/\[\.\.\.[^\]]+\]/g, '*').replace(/\[([^\]]+)\]/g, ':$1')
}

/** Finds the route files under `dir` (Bun.FileSystemRouter, Next.js style), most specific first. */
export function discoverRoutes(dir: string): RouteFile[] {
  const router = new Bun.FileSystemRouter({ dir, style: 'nextjs', fileExtensions: ['.ts'] })
  return Object.entries(router.routes)
    .map(([path, file]) => ({ path: toElysiaPath(path), file }))
    .sort((a, b) => a.path.localeCompare(b.path))
}

/** A route as the gateway mounts it: the path it serves and the factory its file exports. */
export interface MountedRoute {
  path: string
  factory: RouteFactory
}

/** Mounts each route under its path. */
export function mountRoutes(routes: MountedRoute[], gateway: Gateway): Elysia {
  const app = new Elysia()
  for (const route of routes) app.group(route.path === '/' ? '' : route.path, (group) => group.use(route.factory(gateway)))
  return app
}

/** Imports every route file under `dir` (the tests' own folders; the gateway's are in src/route-table.ts). */
export async function importRoutes(dir: string): Promise<MountedRoute[]> {
  const routes: MountedRoute[] = []
  for (const route of discoverRoutes(dir)) {
    const module = (await import(route.file)) as { default?: unknown }
    if (typeof module.default !== 'function') throw new Error(`route file ${route.file} must export default defineRoute(...)`)
    routes.push({ path: route.path, factory: module.default as RouteFactory })
  }
  return routes
}

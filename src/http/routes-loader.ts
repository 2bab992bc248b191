import { Elysia } from 'elysia'
import type { Gateway } from '../gateway'
import type { RouteFactory } from './route'

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

/** Imports every route file and mounts it under its path. */
export async function loadRoutes(dir: string, gateway: Gateway): Promise<Elysia> {
  const app = new Elysia()
  for (const route of discoverRoutes(dir)) {
    const module = (await import(route.file)) as { default?: unknown }
    if (typeof module.default !== 'function') throw new Error(`route file ${route.file} must export default defineRoute(...)`)
    const factory = module.default as RouteFactory
    app.group(route.path === '/' ? '' : route.path, (group) => group.use(factory(gateway)))
  }
  return app
}

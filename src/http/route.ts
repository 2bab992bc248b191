import type { AnyElysia } from 'elysia'
import type { Gateway } from '../gateway'

/**
 * A route file's default export: builds the route's Elysia instance from the gateway. Paths inside
 * it are relative to the file's own path under routes/ (use '' for the file's path itself).
 */
export type RouteFactory = (gateway: Gateway) => AnyElysia

export const defineRoute = (factory: RouteFactory): RouteFactory => factory

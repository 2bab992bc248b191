/** What the caller asked of the cache: use it, leave it alone (`bypass`), or fetch anew and replace the entry (`refresh`). */
export type CacheDirective = 'use' | 'bypass' | 'refresh'

/**
 * Reads `x-svc-cache: off | refresh` and `Cache-Control: no-store | no-cache`. no-store wins over
 * everything (nothing may be kept); then refresh. Unknown values are ignored, as HTTP caches do.
 */
export function cacheDirective(svcCache: string | null, cacheControl: string | null): CacheDirective {
  const own = svcCache?.trim().toLowerCase() ?? ''
  const control = (cacheControl ?? '')
    .toLowerCase()
    .split(',')
    .map((part) => part.trim())
  if (own === 'off' || control.includes('no-store')) return 'bypass'
  if (own === 'refresh' || control.includes('no-cache')) return 'refresh'
  return 'use'
}

/** Response header names carrying the configurable brand (`x-svc-*` by default). */
export interface HeaderNames {
  tier: string
  model: string
  upstream: string
  latency: string
  attempts: string
}

export function headerNames(brand: string): HeaderNames {
  return {
    tier: `x-${brand}-tier`,
    model: `x-${brand}-model`,
    upstream: `x-${brand}-upstream`,
    latency: `x-${brand}-latency-ms`,
    attempts: `x-${brand}-attempts`,
  }
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Echoes a sane incoming x-request-id, else makes a new one. */
export const requestIdFor = (incoming: string | null): string => (incoming !== null && SANE_REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID())

import type { ModelPrice } from '../config/types'

export type { ModelPrice }

/** A price as written in the price table and the config: USD per million tokens. */
export interface UsdPerMillion {
  input: number
  output: number
  cached_input?: number | null
  cache_write?: number | null
}

/** Reports a bad price field; throws. */
export type PriceError = (field: string, message: string) => never

/** USD per million tokens as integer micro-dollars; a negative price or more than six decimals is refused. */
function micros(usd: number, field: string, fail: PriceError): number {
  const value = Math.round(usd * 1e6)
  if (typeof usd !== 'number' || !Number.isFinite(usd) || usd < 0 || Math.abs(value - usd * 1e6) > 1e-6) {
    fail(field, `a USD price per million tokens, at least 0, with at most 6 decimals (got ${usd})`)
  }
  return value
}

/** Reads a price written in USD per million tokens; cache reads and writes default to the input price. */
export function parsePrice(price: UsdPerMillion, field: string, fail: PriceError): ModelPrice {
  const input = micros(price.input, `${field}.input`, fail)
  return {
    input,
    output: micros(price.output, `${field}.output`, fail),
    cachedInput: price.cached_input == null ? input : micros(price.cached_input, `${field}.cached_input`, fail),
    cacheWrite: price.cache_write == null ? input : micros(price.cache_write, `${field}.cache_write`, fail),
  }
}

/** The tokens a request is charged for. Prompt tokens include cache reads and writes. */
export interface ChargedTokens {
  promptTokens: number
  completionTokens: number
  cachedTokens: number
  cacheWriteTokens: number
}

/**
 * The exact cost of a request in nano-dollars (1e-9 USD), rounded half up: uncached input at the
 * input price, cache reads and writes at theirs, completion (reasoning included) at the output price.
 * micro-USD per million tokens x tokens / 1000 = nano-USD.
 */
export function costNanos(tokens: ChargedTokens, price: ModelPrice): number {
  const cached = Math.min(tokens.cachedTokens, tokens.promptTokens)
  const written = Math.min(tokens.cacheWriteTokens, tokens.promptTokens - cached)
  const uncached = tokens.promptTokens - cached - written
  const microTokens = uncached * price.input + cached * price.cachedInput + written * price.cacheWrite + tokens.completionTokens * price.output
  return Math.floor((microTokens + 500) / 1000)
}

/** The highest price one input token can have under this price (for estimates that must not fall short). */
export const maxInputPrice = (price: ModelPrice): number => Math.max(price.input, price.cachedInput, price.cacheWrite)

/** Nano-dollars as a decimal USD string, exact (no float rounding, no exponent): 12345 -> "0.000012345". */
export function formatUsd(nanos: number): string {
  if (nanos === 0) return '0'
  const sign = nanos < 0 ? '-' : ''
  const digits = String(Math.abs(nanos)).padStart(10, '0')
  const fraction = digits.slice(-9).replace(/0+$/, '')
  return `${sign}${digits.slice(0, -9)}${fraction ? `.${fraction}` : ''}`
}

/**
 * Nano-dollars as a JSON number of USD. An integer divided by 1e9 is the double nearest the exact
 * decimal, and JSON prints the shortest form that reads back as it: the decimal itself.
 */
export const usd = (nanos: number): number => nanos / 1e9

/** An optional amount (a budget) in nano-dollars as USD; null stays null. */
export const usdOrNull = (nanos: number | null): number | null => (nanos === null ? null : usd(nanos))

/** USD (a budget as configured) to whole nano-dollars. */
export const nanosOfUsd = (amount: number): number => Math.round(amount * 1e9)

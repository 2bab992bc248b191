import { invalidConfig } from '../errors'
import table from './price-table.json'
import { type ModelPrice, parsePrice, type UsdPerMillion } from './price'

interface PriceRow extends UsdPerMillion {
  /** The public price page the row was read from. */
  source: string
  /** When it was read (YYYY-MM-DD). */
  date: string
}

/**
 * The built-in prices (price-table.json, shipped with the gateway, never fetched at run time),
 * checked when first loaded: a bad row stops the start naming its model and field.
 */
export function builtInPrices(rows: Record<string, PriceRow> = (table as { models: Record<string, PriceRow> }).models): ReadonlyMap<string, ModelPrice> {
  const prices = new Map<string, ModelPrice>()
  for (const [model, row] of Object.entries(rows)) {
    const fail = (field: string, message: string): never => {
      throw invalidConfig(`Invalid price table (src/spend/price-table.json): models."${model}"${field}: ${message}`, `models."${model}"${field}`)
    }
    if (!/^https:\/\//.test(row.source ?? '')) fail('.source', 'the https address of the public price page')
    if (!/^\d{4}-\d{2}-\d{2}$/.test(row.date ?? '')) fail('.date', 'the date the price was read, YYYY-MM-DD')
    prices.set(model, parsePrice(row, '', fail))
  }
  return prices
}

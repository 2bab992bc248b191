import { invalidRequest } from '../errors'
import type { KeyPageQuery, KeyRecord } from './keys'

/** The most keys one page holds, and how many a page holds unless asked for fewer. */
export const MAX_KEY_PAGE = 1000
/** A longer search could match no name (names are at most 100 characters). */
const MAX_SEARCH_LENGTH = 100
const CURSOR = /^[A-Za-z0-9_-]{1,400}$/

/** A page of keys and the cursor of the next one: null on the last page. */
export interface KeyPage {
  records: KeyRecord[]
  nextCursor: string | null
}

/**
 * The cursor after a page: the last id on it, base64url-encoded, so callers treat it as opaque and
 * the listing may change what it holds without breaking them.
 */
const cursorAfter = (record: KeyRecord): string => Buffer.from(record.id).toString('base64url')

/** The id a cursor stands for; null when it is not a cursor this listing gave. */
function afterOf(cursor: string): string | null {
  if (!CURSOR.test(cursor)) return null
  const id = Buffer.from(cursor, 'base64url').toString()
  return id !== '' && Buffer.from(id).toString('base64url') === cursor ? id : null
}

/**
 * The listing's query from what a caller sent (query-string values, or the CLI's flags), each
 * refused with a 400 naming it: `limit` a whole number from 1 to 1000, `cursor` one this listing
 * gave, `q` up to 100 characters (blank means no search). `param` names them as the caller knows them.
 */
export function keyPageQuery(raw: { limit?: string; cursor?: string; q?: string }, param = { limit: 'limit', cursor: 'cursor', q: 'q' }): KeyPageQuery {
  let limit = MAX_KEY_PAGE
  if (raw.limit !== undefined) {
    limit = /^\d{1,7}$/.test(raw.limit) ? Number(raw.limit) : 0
    if (limit < 1 || limit > MAX_KEY_PAGE) {
      throw invalidRequest(`Invalid request: ${param.limit} must be a whole number from 1 to ${MAX_KEY_PAGE}`, { param: param.limit })
    }
  }
  const search = raw.q?.trim() ?? ''
  if (search.length > MAX_SEARCH_LENGTH) throw invalidRequest(`Invalid request: ${param.q} must be at most ${MAX_SEARCH_LENGTH} characters`, { param: param.q })
  const after = raw.cursor === undefined ? null : afterOf(raw.cursor)
  if (raw.cursor !== undefined && after === null) {
    throw invalidRequest(`Invalid request: ${param.cursor} must be a next_cursor from an earlier page of this listing`, { param: param.cursor })
  }
  return { after, limit, search: search === '' ? null : search }
}

/** `text` as a LIKE pattern matching it anywhere, its own `\`, `%` and `_` escaped with a backslash. */
export const likePattern = (text: string): string => `%${text.replace(/[\\%_]/g, (char) => `\\${char}`)}%`

/**
 * One page through `read`, which answers up to `limit` rows: it is asked for one more, so the last
 * page is known without a second query, and says `nextCursor: null`.
 */
export async function readKeyPage(read: (query: KeyPageQuery) => Promise<KeyRecord[]>, query: KeyPageQuery): Promise<KeyPage> {
  const rows = await read({ ...query, limit: query.limit + 1 })
  const records = rows.slice(0, query.limit)
  return { records, nextCursor: rows.length > query.limit ? cursorAfter(records.at(-1)!) : null }
}

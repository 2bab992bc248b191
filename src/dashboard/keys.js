// The keys table: one page at a time from the paged listing, searched on the server, so it opens
// as fast with 50,000 keys as with 50.
import { $, api, cell, debounced, usd } from './api.js'

const PAGE_SIZE = 50

const state = {
  /** Tiers by name, for the limits a key inherits. */
  tiers: {},
  search: '',
  /** The cursor of each page seen so far: cursors[0] is the first page's (none). */
  cursors: [null],
  page: 0,
  /** Which load is the latest: an older answer arriving late (a search typed on) is dropped. */
  loads: 0,
}

function spendBeside(spent, budget) {
  return budget === null ? `${usd(spent)} / no budget` : `${usd(spent)} / ${usd(budget)}`
}

function statusOf(key) {
  if (key.revoked_at) return 'revoked'
  return key.expires_at && Date.parse(key.expires_at) <= Date.now() ? 'expired' : 'active'
}

function keyRow(key) {
  const tier = state.tiers[key.tier]
  const status = statusOf(key)
  const limits = [key.rpm ?? tier?.requests_per_minute, key.tpm ?? tier?.tokens_per_minute, key.max_concurrent ?? tier?.max_concurrent]
    .map((v) => v ?? '-')
    .join(' / ')
  const row = document.createElement('tr')
  row.dataset.keyId = key.id
  const prefix = cell('')
  const code = document.createElement('code')
  code.textContent = `${key.prefix}…`
  prefix.append(code)
  row.append(
    prefix,
    cell(key.name),
    cell(key.tier),
    cell(String(key.requests_today)),
    cell(String(key.tokens_today)),
    cell(limits),
    Object.assign(cell(spendBeside(key.spend_today_usd, key.daily_budget_in_force_usd)), { className: 'spend-today' }),
    Object.assign(cell(spendBeside(key.spend_month_usd, key.monthly_budget_in_force_usd)), { className: 'spend-month' }),
    cell(status, status),
  )
  const actions = document.createElement('td')
  if (status === 'active') {
    const revoke = document.createElement('button')
    revoke.className = 'revoke'
    revoke.textContent = 'Revoke'
    revoke.onclick = async () => {
      if (!confirm(`Revoke ${key.prefix}… (${key.name})? It stops working at once.`)) return
      await api(`/admin/keys/${encodeURIComponent(key.id)}`, { method: 'DELETE' })
      await loadKeys()
    }
    actions.append(revoke)
  }
  row.append(actions)
  return row
}

/** Shows the current page: the keys, where it is in the listing, and whether there is more. */
export async function loadKeys() {
  const params = new URLSearchParams({ limit: String(PAGE_SIZE) })
  const cursor = state.cursors[state.page]
  if (cursor) params.set('cursor', cursor)
  if (state.search) params.set('q', state.search)
  const load = ++state.loads
  const { data, next_cursor } = await api(`/admin/keys?${params}`)
  if (load !== state.loads) return
  state.cursors.length = state.page + 1
  if (next_cursor) state.cursors.push(next_cursor)
  $('keys').tBodies[0].replaceChildren(...data.map(keyRow))
  const first = state.page * PAGE_SIZE
  const matching = state.search ? ` matching "${state.search}"` : ''
  $('keys-position').textContent =
    data.length === 0 ? `No keys${matching}.` : `Keys ${first + 1} to ${first + data.length}${matching}${next_cursor ? '' : ' (the last)'}`
  $('keys-previous').disabled = state.page === 0
  $('keys-next').disabled = !next_cursor
}

export function setTiers(tiers) {
  state.tiers = Object.fromEntries(tiers.map((t) => [t.name, t]))
}

/** Starts the listing over from its first page, searching for `text` ('' for every key). */
export function searchKeys(text) {
  state.search = text.trim()
  state.cursors = [null]
  state.page = 0
  $('keys-search').value = state.search
  return loadKeys()
}

export function initKeys() {
  $('keys-search').addEventListener(
    'input',
    debounced(() => searchKeys($('keys-search').value)),
  )
  $('keys-previous').addEventListener('click', () => {
    state.page = Math.max(0, state.page - 1)
    return loadKeys()
  })
  $('keys-next').addEventListener('click', () => {
    if (state.cursors[state.page + 1] === undefined) return
    state.page += 1
    return loadKeys()
  })
}

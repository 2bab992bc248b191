// The request log: a filtered list, newest first, a page at a time from GET /admin/requests, and one
// request opened from it (GET /admin/requests/{id}): its fields, its attempts on a timeline, its
// bodies when they were kept. The open request is in the address (#requests/ID), so it can be shared.
import { $, api, cell, fillSelect, keyPicker, usd } from './api.js'

const PAGE_SIZE = 50

const state = {
  keyId: '',
  cursor: null,
  loaded: false,
  shown: 0,
  /** Which load is the latest: an older answer arriving late is dropped. */
  loads: 0,
}

const time = (iso) => iso.replace('T', ' ').replace('Z', ' UTC')
const ms = (value) => (value === null || value === undefined ? '-' : `${value} ms`)
const statusClass = (status) => (status < 400 ? 'ok' : status < 500 ? 'client-error' : 'server-error')

/** The filters as the admin API's query. Times are UTC throughout, as in the table and the logs. */
function filterParams() {
  const params = new URLSearchParams({ limit: String(PAGE_SIZE) })
  if (state.keyId) params.set('key_id', state.keyId)
  for (const [param, id] of [
    ['alias', 'requests-alias'],
    ['upstream', 'requests-upstream'],
    ['status', 'requests-status'],
    ['error_type', 'requests-error-type'],
  ]) {
    const value = $(id).value.trim()
    if (value) params.set(param, value)
  }
  for (const [param, id] of [
    ['since', 'requests-since'],
    ['until', 'requests-until'],
  ]) {
    if ($(id).value) params.set(param, new Date(`${$(id).value}Z`).toISOString())
  }
  return params
}

function requestRow(record) {
  const row = document.createElement('tr')
  row.dataset.requestId = record.id
  row.className = 'clickable'
  const tried = record.attempts.length > 1 ? ` (${record.attempts.length})` : ''
  row.append(
    cell(time(record.time)),
    cell(String(record.status), statusClass(record.status)),
    cell(record.key_prefix ? `${record.key_prefix}…` : '-'),
    cell(record.api),
    cell(record.alias ?? '-'),
    cell(`${record.upstream ?? '-'}${tried}`),
    cell(ms(record.latency_ms)),
    cell(`${record.prompt_tokens} / ${record.completion_tokens}`),
    cell(usd(record.cost_usd)),
    cell(record.error_type ?? ''),
  )
  row.addEventListener('click', () => {
    location.hash = `#requests/${encodeURIComponent(record.id)}`
  })
  return row
}

/** The first page for the filters (`more` false), or the next one appended below. */
async function loadRequests(more = false) {
  const params = filterParams()
  if (more && state.cursor) params.set('cursor', state.cursor)
  $('requests-error').textContent = ''
  const load = ++state.loads
  try {
    const { data, next_cursor } = await api(`/admin/requests?${params}`)
    if (load !== state.loads) return
    const body = $('requests').tBodies[0]
    if (more) body.append(...data.map(requestRow))
    else body.replaceChildren(...data.map(requestRow))
    state.shown = (more ? state.shown : 0) + data.length
    state.cursor = next_cursor
    state.loaded = true
    $('requests-more').hidden = !next_cursor
    $('requests-count').textContent = `${state.shown}${next_cursor ? '+' : ''} shown`
    $('requests').dataset.rows = String(state.shown)
  } catch (error) {
    $('requests-error').textContent = error.message
  }
}

/** A term and its value in the detail's list. */
function field(list, term, value) {
  if (value === null || value === undefined || value === '') return
  list.append(Object.assign(document.createElement('dt'), { textContent: term }), Object.assign(document.createElement('dd'), { textContent: value }))
}

function showFields(r) {
  const list = $('request-fields')
  list.replaceChildren()
  field(list, 'Time', time(r.time))
  field(list, 'Key', r.key_prefix ? `${r.key_prefix}… (${r.key_id}), tier ${r.tier ?? '-'}` : null)
  field(list, 'API', `${r.api}: ${r.method} ${r.path}`)
  field(list, 'Alias', r.alias)
  field(list, 'Served by', r.upstream ? `${r.upstream} / ${r.upstream_model ?? '-'}` : null)
  field(list, 'Error', r.error_type ? `${r.error_type}${r.error_code ? ` (${r.error_code})` : ''}: ${r.error_message ?? ''}` : null)
  field(list, 'Latency', ms(r.latency_ms))
  field(list, 'Time to first token', r.ttft_ms === null ? null : ms(r.ttft_ms))
  field(list, 'Tokens', `${r.prompt_tokens} prompt, ${r.completion_tokens} completion${r.usage_estimated ? ' (estimated: the stream was cut)' : ''}`)
  field(list, 'Cost', usd(r.cost_usd))
  field(list, 'Cache', r.cache ? `${r.cache}${r.cache_saved_usd ? `, saved ${usd(r.cache_saved_usd)}` : ''}` : null)
  field(list, 'Response id', r.response_id)
  field(list, 'Finish reasons', r.finish_reasons?.join(', '))
  field(list, 'Dropped fields', r.dropped.join(', '))
  field(list, 'User agent', r.user_agent)
}

/** Each attempt as a bar on the request's own time axis: where it started, how long it ran, how it ended. */
function showTimeline(r) {
  const span = Math.max(r.latency_ms, ...r.attempts.map((a) => a.end_ms ?? a.start_ms), 1)
  const rows = r.attempts.map((attempt, i) => {
    const row = document.createElement('div')
    row.className = 'attempt'
    row.dataset.outcome = attempt.outcome ?? 'ok'
    const label = document.createElement('span')
    label.className = 'attempt-label'
    const status = attempt.status === null ? '' : ` ${attempt.status}`
    label.textContent = `${i + 1}. ${attempt.upstream} / ${attempt.model}: ${attempt.outcome ?? 'ok'}${status}, ${attempt.end_ms === null ? 'unfinished' : ms(attempt.latency_ms)}`
    const track = document.createElement('span')
    track.className = 'attempt-track'
    const bar = document.createElement('span')
    bar.className = `attempt-bar ${attempt.outcome && attempt.outcome !== 'ok' ? 'failed' : 'ok'}`
    bar.style.left = `${(100 * attempt.start_ms) / span}%`
    bar.style.width = `${Math.max(0.5, (100 * ((attempt.end_ms ?? span) - attempt.start_ms)) / span)}%`
    bar.title = `from ${attempt.start_ms} ms to ${attempt.end_ms ?? '?'} ms`
    track.append(bar)
    row.append(label, track)
    return row
  })
  if (rows.length === 0) rows.push(Object.assign(document.createElement('p'), { className: 'muted', textContent: 'No upstream was tried.' }))
  $('request-timeline').replaceChildren(...rows)
  $('request-timeline').dataset.attempts = String(r.attempts.length)
}

/** A body as kept: pretty JSON when it parses, else as it is (a body cut at the size cap does not parse). */
function prettyJson(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text
  }
}

function bodyBlock(title, text) {
  const block = document.createElement('details')
  block.open = true
  const summary = Object.assign(document.createElement('summary'), { textContent: title })
  block.append(summary, Object.assign(document.createElement('pre'), { textContent: prettyJson(text) }))
  return block
}

function showBodies(r) {
  const blocks = []
  if (r.request_body !== null) blocks.push(bodyBlock('Request body', r.request_body))
  if (r.response_body !== null) blocks.push(bodyBlock('Response body', r.response_body))
  if (blocks.length === 0) blocks.push(Object.assign(document.createElement('p'), { className: 'muted', textContent: 'Not kept: see [request_log] bodies.' }))
  $('request-bodies').replaceChildren(...blocks)
}

async function showRequest(id) {
  const detail = $('request-detail')
  detail.hidden = false
  $('request-id').textContent = id
  $('request-error').textContent = ''
  try {
    const record = await api(`/admin/requests/${encodeURIComponent(id)}`)
    $('request-status').textContent = String(record.status)
    $('request-status').className = `badge ${statusClass(record.status)}`
    showFields(record)
    showTimeline(record)
    showBodies(record)
    detail.dataset.loaded = record.id
  } catch (error) {
    for (const part of ['request-fields', 'request-timeline', 'request-bodies']) $(part).replaceChildren()
    $('request-error').textContent = error.status === 404 ? 'No such request in the log (pruned, or never logged).' : error.message
  }
}

/** `#requests` shows the list; `#requests/ID` also opens that request. */
export async function showRoute(hash) {
  const id = hash.startsWith('#requests/') ? decodeURIComponent(hash.slice('#requests/'.length)) : ''
  if (!state.loaded) {
    const [aliases, upstreams] = await Promise.all([api('/admin/aliases'), api('/admin/upstreams')])
    fillSelect(
      $('requests-alias'),
      aliases.data.map((a) => [a.name, a.name]),
    )
    fillSelect(
      $('requests-upstream'),
      upstreams.data.map((u) => [u.name, u.name]),
    )
    await loadRequests()
  }
  if (id) await showRequest(id)
  else $('request-detail').hidden = true
}

export function initRequests() {
  keyPicker($('requests-key'), (id) => {
    state.keyId = id
    return loadRequests()
  })
  $('request-filters').addEventListener('change', (event) => event.target.id !== 'requests-key' && loadRequests())
  $('request-filters').addEventListener('submit', (event) => {
    event.preventDefault()
    return loadRequests()
  })
  $('requests-more').addEventListener('click', () => loadRequests(true))
}

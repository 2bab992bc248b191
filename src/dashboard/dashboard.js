// chatgate dashboard: plain browser JavaScript modules, no build step. Talks only to the admin API
// (see api.js). This part: the overview (charts, config, aliases), the session and which view shows.
import { $, api, cell, fillSelect, keyPicker, STORAGE_KEY, usd, whenRefused } from './api.js'
import { initKeys, loadKeys, searchKeys, setTiers } from './keys.js'
import { initRequests, showRoute } from './requests.js'

const RANGES = {
  hour: { bucket: 'minute', spanMs: 3_600_000 },
  day: { bucket: 'hour', spanMs: 86_400_000 },
  month: { bucket: 'day', spanMs: 30 * 86_400_000 },
}
const charts = {}
/** The key the charts are filtered on ('' for all), as the key picker resolved it. */
let chartKey = ''

// ---------------------------------------------------------------- charts

function chartOptions(el, series) {
  return {
    width: el.clientWidth || 320,
    height: 220,
    series: [{}, ...series],
    axes: [{ stroke: '#5d6677' }, { stroke: '#5d6677' }],
    legend: { live: false },
  }
}

function draw(id, series, xs, ys) {
  const el = $(id)
  const data = [xs, ...ys]
  if (!charts[id]) charts[id] = new uPlot(chartOptions(el, series), data, el)
  else charts[id].setData(data)
  el.dataset.points = String(xs.length)
}

async function loadSeries() {
  const range = RANGES[$('range').value]
  // One reading of the clock for both ends: two could be a millisecond apart, and the span then holds one bucket more.
  const now = Date.now()
  const params = new URLSearchParams({ bucket: range.bucket, from: new Date(now - range.spanMs).toISOString(), to: new Date(now).toISOString() })
  if (chartKey) params.set('key_id', chartKey)
  for (const [param, id] of [
    ['alias', 'filter-alias'],
    ['upstream', 'filter-upstream'],
  ]) {
    if ($(id).value) params.set(param, $(id).value)
  }
  const { data } = await api(`/admin/usage/series?${params}`)
  const xs = data.map((p) => Date.parse(p.t) / 1000)
  draw(
    'chart-requests',
    [
      { label: 'requests', stroke: '#2f6fed' },
      { label: 'errors', stroke: '#c0392b' },
    ],
    xs,
    [data.map((p) => p.requests), data.map((p) => p.errors)],
  )
  draw(
    'chart-tokens',
    [
      { label: 'prompt', stroke: '#7b61ff' },
      { label: 'completion', stroke: '#1e8e3e' },
    ],
    xs,
    [data.map((p) => p.prompt_tokens), data.map((p) => p.completion_tokens)],
  )
  // Beside what was spent, what response cache hits saved (the cost of the answers they repeated).
  draw(
    'chart-spend',
    [
      { label: 'spent', stroke: '#b7791f' },
      { label: 'saved by the cache', stroke: '#1e8e3e' },
    ],
    xs,
    [data.map((p) => p.cost_usd), data.map((p) => p.cache_saved_usd)],
  )
  const sumUsd = (field) => usd(data.reduce((sum, p) => sum + Math.round(p[field] * 1e9), 0) / 1e9)
  $('chart-spend').dataset.total = sumUsd('cost_usd')
  $('chart-spend').dataset.saved = sumUsd('cache_saved_usd')
  $('spend-saved').textContent = data.some((p) => p.cache_saved_usd > 0) ? `, ${sumUsd('cache_saved_usd')} saved by the cache` : ''
  // Latency exists only where there were requests: join the points across quiet buckets.
  draw(
    'chart-latency',
    [
      { label: 'p50', stroke: '#2f6fed', spanGaps: true, points: { show: true } },
      { label: 'p95', stroke: '#b7791f', spanGaps: true, points: { show: true } },
    ],
    xs,
    [data.map((p) => p.p50_ms), data.map((p) => p.p95_ms)],
  )
  $('chart-requests').dataset.active = String(data.filter((p) => p.requests > 0).length)
}

// ---------------------------------------------------------------- tables

/** The config in force and this instance's own file; where they differ, entry by entry. */
function showConfig(status) {
  const short = (hash) => (hash ? hash.slice(0, 12) : 'unknown')
  const state = $('config-state')
  state.textContent = status.in_sync ? 'in step' : `${status.differences.length} differences`
  state.className = `badge ${status.in_sync ? 'in_sync' : 'drift'}`
  $('config-summary').textContent =
    `In force: version ${status.in_force.version}, hash ${short(status.in_force.hash)}, from ${status.in_force.source}` +
    `${status.in_force.written_at ? `, written ${status.in_force.written_at}` : ''}. ` +
    `This instance's file: ${status.file.source}, hash ${short(status.file.hash)}.`
  $('config-drift').hidden = status.in_sync
  $('config-differences').replaceChildren(
    ...status.differences.map((difference) => Object.assign(document.createElement('li'), { textContent: difference.text })),
  )
}

async function loadTables() {
  const [tiers, aliases, upstreams, config] = await Promise.all([api('/admin/tiers'), api('/admin/aliases'), api('/admin/upstreams'), api('/admin/config')])
  showConfig(config)
  setTiers(tiers.data)
  await loadKeys()

  const aliasBody = $('aliases').tBodies[0]
  aliasBody.replaceChildren()
  for (const alias of aliases.data) {
    const row = document.createElement('tr')
    const targets = document.createElement('td')
    for (const target of alias.targets) {
      const line = document.createElement('div')
      line.textContent = `${target.upstream} / ${target.model} / ${target.weight}: `
      const badge = document.createElement('span')
      badge.className = `badge ${target.circuit}`
      badge.textContent = target.circuit.replace('_', ' ')
      line.append(badge)
      targets.append(line)
    }
    row.append(cell(alias.name), cell(alias.strategy), targets)
    aliasBody.append(row)
  }

  fillSelect(
    $('filter-alias'),
    aliases.data.map((a) => [a.name, a.name]),
  )
  fillSelect(
    $('filter-upstream'),
    upstreams.data.map((u) => [u.name, u.name]),
  )
  fillSelect(
    $('new-key-tier'),
    tiers.data.map((t) => [t.name, t.name]),
    false,
  )
}

async function refresh() {
  await Promise.all([loadTables(), loadSeries()])
}

// ---------------------------------------------------------------- session

/** Shows the view the address names: the overview, the requests, or one request. */
function route() {
  const requests = location.hash.startsWith('#requests')
  $('view-overview').hidden = requests
  $('view-requests').hidden = !requests
  for (const link of document.querySelectorAll('nav a')) link.classList.toggle('current', link.getAttribute('href') === (requests ? '#requests' : '#overview'))
  return requests ? showRoute(location.hash) : refresh()
}

function logout(message = '') {
  sessionStorage.removeItem(STORAGE_KEY)
  $('app').hidden = true
  $('logout').hidden = true
  $('nav').hidden = true
  $('login').hidden = false
  $('login-error').textContent = message
}

async function enter() {
  $('login').hidden = true
  $('app').hidden = false
  $('logout').hidden = false
  $('nav').hidden = false
  await route()
}

$('login').addEventListener('submit', async (event) => {
  event.preventDefault()
  sessionStorage.setItem(STORAGE_KEY, $('login-key').value)
  $('login-key').value = ''
  try {
    await enter()
  } catch (error) {
    if (error.message !== 'unauthorized') $('login-error').textContent = error.message
  }
})
whenRefused(logout)
initKeys()
initRequests()
keyPicker($('filter-key'), (id) => {
  chartKey = id
  return loadSeries()
})
window.addEventListener('hashchange', () => void route().catch(() => {}))
$('logout').addEventListener('click', () => logout())
$('filters').addEventListener('change', (event) => event.target.id !== 'filter-key' && loadSeries())
$('create-key').addEventListener('submit', async (event) => {
  event.preventDefault()
  const fields = { name: $('new-key-name').value, tier: $('new-key-tier').value }
  for (const [id, field] of [
    ['new-key-daily-budget', 'daily_budget_usd'],
    ['new-key-monthly-budget', 'monthly_budget_usd'],
  ]) {
    if ($(id).value !== '') fields[field] = Number($(id).value)
    $(id).value = ''
  }
  const created = await api('/admin/keys', { method: 'POST', body: JSON.stringify(fields) })
  $('new-key-name').value = ''
  const notice = $('new-key')
  notice.hidden = false
  notice.textContent = `New key for "${created.name}" (shown only now, copy it): ${created.key}`
  // Keys are listed in id order: searching for the new one puts it in view whatever page it is on.
  await searchKeys(created.prefix)
})
window.addEventListener('resize', () => {
  for (const [id, chart] of Object.entries(charts)) chart.setSize({ width: $(id).clientWidth || 320, height: 220 })
})
setInterval(() => {
  if (!$('view-overview').hidden && !$('app').hidden) loadSeries().catch(() => {})
}, 30_000)

if (sessionStorage.getItem(STORAGE_KEY)) enter().catch(() => {})

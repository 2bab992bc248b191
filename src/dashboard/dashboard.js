// chatgate dashboard: plain browser JavaScript, no build step. Talks only to the admin API, with the
// admin key from sessionStorage sent as a header (never in a URL or a cookie).
;(() => {
  const STORAGE_KEY = 'chatgate.adminKey'
  const RANGES = {
    hour: { bucket: 'minute', spanMs: 3_600_000 },
    day: { bucket: 'hour', spanMs: 86_400_000 },
    month: { bucket: 'day', spanMs: 30 * 86_400_000 },
  }
  const $ = (id) => document.getElementById(id)
  const charts = {}

  async function api(path, options = {}) {
    const response = await fetch(path, {
      ...options,
      headers: { authorization: `Bearer ${sessionStorage.getItem(STORAGE_KEY)}`, 'content-type': 'application/json', ...(options.headers ?? {}) },
    })
    if (response.status === 401) {
      logout('The admin key was refused.')
      throw new Error('unauthorized')
    }
    const body = await response.json()
    if (!response.ok) throw new Error(body?.error?.message ?? `HTTP ${response.status}`)
    return body
  }

  function cell(text, className) {
    const td = document.createElement('td')
    if (className) {
      const span = document.createElement('span')
      span.className = `badge ${className}`
      span.textContent = text
      td.append(span)
    } else td.textContent = text
    return td
  }

  function fillSelect(select, values, keepFirst = true) {
    const current = select.value
    while (select.options.length > (keepFirst ? 1 : 0)) select.remove(keepFirst ? 1 : 0)
    for (const [value, label] of values) select.add(new Option(label, value))
    if ([...select.options].some((o) => o.value === current)) select.value = current
  }

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
    const params = new URLSearchParams({ bucket: range.bucket, from: new Date(Date.now() - range.spanMs).toISOString(), to: new Date().toISOString() })
    for (const [param, id] of [
      ['key_id', 'filter-key'],
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
    draw('chart-spend', [{ label: 'USD', stroke: '#b7791f' }], xs, [data.map((p) => p.cost_usd)])
    $('chart-spend').dataset.total = usd(data.reduce((sum, p) => sum + Math.round(p.cost_usd * 1e9), 0) / 1e9)
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

  /** USD with up to 9 decimals, no exponent. */
  function usd(amount) {
    return `$${amount.toFixed(9).replace(/\.?0+$/, '')}`
  }

  function spendBeside(spent, budget) {
    return budget === null ? `${usd(spent)} / no budget` : `${usd(spent)} / ${usd(budget)}`
  }

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
    const today = new Date().toISOString().slice(0, 10)
    const [keys, tiers, aliases, upstreams, usage, config] = await Promise.all([
      api('/admin/keys'),
      api('/admin/tiers'),
      api('/admin/aliases'),
      api('/admin/upstreams'),
      api(`/admin/usage?from=${today}&to=${today}`),
      api('/admin/config'),
    ])
    showConfig(config)
    const tierByName = Object.fromEntries(tiers.data.map((t) => [t.name, t]))
    const todayByKey = {}
    for (const row of usage.data) {
      const entry = (todayByKey[row.key_id] ??= { requests: 0, tokens: 0 })
      entry.requests += row.requests
      entry.tokens += row.total_tokens
    }

    const body = $('keys').tBodies[0]
    body.replaceChildren()
    for (const key of keys.data) {
      const tier = tierByName[key.tier]
      const status = key.revoked_at ? 'revoked' : key.expires_at && Date.parse(key.expires_at) <= Date.now() ? 'expired' : 'active'
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
        cell(String(todayByKey[key.id]?.requests ?? 0)),
        cell(String(todayByKey[key.id]?.tokens ?? 0)),
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
          await refresh()
        }
        actions.append(revoke)
      }
      row.append(actions)
      body.append(row)
    }

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
      $('filter-key'),
      keys.data.map((k) => [k.id, `${k.prefix}… ${k.name}`]),
    )
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

  function logout(message = '') {
    sessionStorage.removeItem(STORAGE_KEY)
    $('app').hidden = true
    $('logout').hidden = true
    $('login').hidden = false
    $('login-error').textContent = message
  }

  async function enter() {
    $('login').hidden = true
    $('app').hidden = false
    $('logout').hidden = false
    await refresh()
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
  $('logout').addEventListener('click', () => logout())
  $('filters').addEventListener('change', () => loadSeries())
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
    await refresh()
  })
  window.addEventListener('resize', () => {
    for (const [id, chart] of Object.entries(charts)) chart.setSize({ width: $(id).clientWidth || 320, height: 220 })
  })
  setInterval(() => {
    if (!$('app').hidden) loadSeries().catch(() => {})
  }, 30_000)

  if (sessionStorage.getItem(STORAGE_KEY)) enter().catch(() => {})
})()

// What every part of the dashboard shares: the admin API with the key from sessionStorage sent as a
// header (never in a URL or a cookie), and small DOM helpers.
export const STORAGE_KEY = 'chatgate.adminKey'

export const $ = (id) => document.getElementById(id)

/** Called when the admin key is refused; the session part of the page sets it. */
let onRefused = () => {}
export const whenRefused = (handler) => {
  onRefused = handler
}

export async function api(path, options = {}) {
  const response = await fetch(path, {
    ...options,
    headers: { authorization: `Bearer ${sessionStorage.getItem(STORAGE_KEY)}`, 'content-type': 'application/json', ...(options.headers ?? {}) },
  })
  if (response.status === 401) {
    onRefused('The admin key was refused.')
    throw new Error('unauthorized')
  }
  const body = await response.json()
  if (!response.ok) throw Object.assign(new Error(body?.error?.message ?? `HTTP ${response.status}`), { status: response.status })
  return body
}

/** A table cell holding `text`, as a badge when `className` is given. Text only: never HTML. */
export function cell(text, className) {
  const td = document.createElement('td')
  if (className) {
    const span = document.createElement('span')
    span.className = `badge ${className}`
    span.textContent = text
    td.append(span)
  } else td.textContent = text
  return td
}

export function fillSelect(select, values, keepFirst = true) {
  const current = select.value
  while (select.options.length > (keepFirst ? 1 : 0)) select.remove(keepFirst ? 1 : 0)
  for (const [value, label] of values) select.add(new Option(label, value))
  if ([...select.options].some((o) => o.value === current)) select.value = current
}

/** USD with up to 9 decimals, no exponent. */
export function usd(amount) {
  return `$${amount.toFixed(9).replace(/\.?0+$/, '')}`
}

/** Runs `action` once typing has paused: one request per search, not one per keystroke. */
export function debounced(action, ms = 250) {
  let timer
  return (...args) => {
    clearTimeout(timer)
    timer = setTimeout(() => action(...args), ms)
  }
}

/** The id of the key `text` names: its id or prefix, else the one key whose name holds it. */
async function keyIdOf(text) {
  try {
    return (await api(`/admin/keys/${encodeURIComponent(text)}`)).id
  } catch (error) {
    if (error.status !== 404) throw error
  }
  const { data } = await api(`/admin/keys?${new URLSearchParams({ q: text, limit: '2' })}`)
  if (data.length === 1) return data[0].id
  throw new Error(data.length === 0 ? `No key with the id, prefix or name "${text}"` : `Several keys match "${text}": pick one from the list`)
}

/**
 * A key picker: a text field that suggests keys as one types (a name, prefix or id fragment; 20 at
 * most, from the paged listing) and resolves what was typed (see keyIdOf) to the key's id.
 * `onPick` gets the id, or '' when the field is cleared.
 */
export function keyPicker(input, onPick) {
  const list = document.createElement('datalist')
  list.id = `${input.id}-options`
  input.after(list)
  input.setAttribute('list', list.id)
  input.addEventListener(
    'input',
    debounced(async () => {
      const q = input.value.trim()
      if (q === '') return list.replaceChildren()
      const { data } = await api(`/admin/keys?${new URLSearchParams({ q, limit: '20' })}`)
      list.replaceChildren(...data.map((key) => new Option(`${key.prefix}… ${key.name}`, key.id)))
    }),
  )
  input.addEventListener('change', async () => {
    const text = input.value.trim()
    input.setCustomValidity('')
    if (text === '') return onPick('')
    try {
      onPick(await keyIdOf(text))
    } catch (error) {
      input.setCustomValidity(error.message)
      input.reportValidity()
    }
  })
}

/**
 * A URL fit to show: a user name, a password and every query value are replaced by `***`, since
 * operators do put credentials there (`https://user:token@host/v1`, `?api-key=...`). Text that is
 * not a URL is shown as `***` whole.
 */
export function redactUrl(text: string): string {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return '***'
  }
  if (url.username !== '') url.username = '***'
  if (url.password !== '') url.password = '***'
  for (const key of new Set(url.searchParams.keys())) url.searchParams.set(key, '***')
  const shown = url.toString()
  // URL adds a slash to a bare origin; keep the configured form otherwise.
  return text.endsWith('/') || !shown.endsWith('/') || url.pathname !== '/' ? shown : shown.slice(0, -1)
}

import { Elysia } from 'elysia'
import { defineAdminRoute } from '../src/http/admin'
import { pageSecurityHeaders } from '../src/http/page-security'

const PAGE_PATH = new URL('../src/dashboard/index.html', import.meta.url).pathname
const PAGE = Bun.file(PAGE_PATH)
const SECURITY = pageSecurityHeaders(await PAGE.text())

/**
 * The dashboard page. It holds no data: it asks for the admin key and reads the admin API with it.
 * Mounted only when the admin API is on, like every /admin path.
 */
export default defineAdminRoute(() =>
  new Elysia().get(
    '',
    () =>
      // Everything the page loads comes from this origin; nothing may frame it.
      new Response(PAGE, { headers: { 'content-type': 'text/html; charset=utf-8', ...SECURITY } }),
    { detail: { tags: ['Admin'], summary: 'Usage dashboard (HTML)', description: 'Log in with the admin key; the page reads the admin API.' } },
  ),
)

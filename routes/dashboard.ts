import { readFileSync } from 'node:fs'
import { Elysia } from 'elysia'
import { defineAdminRoute } from '../src/http/admin'
import { pageSecurityHeaders } from '../src/http/page-security'
import { fromRoot } from '../src/root'

const PAGE_PATH = fromRoot('src/dashboard/index.html')
const PAGE = Bun.file(PAGE_PATH)
const SECURITY = pageSecurityHeaders(readFileSync(PAGE_PATH, 'utf8'))

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

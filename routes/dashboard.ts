import { Elysia } from 'elysia'
import { defineAdminRoute } from '../src/http/admin'

const PAGE = Bun.file(new URL('../src/dashboard/index.html', import.meta.url).pathname)

/**
 * The dashboard page. It holds no data: it asks for the admin key and reads the admin API with it.
 * Mounted only when the admin API is on, like every /admin path.
 */
export default defineAdminRoute(() =>
  new Elysia().get(
    '',
    () =>
      new Response(PAGE, {
        headers: {
          'content-type': 'text/html; charset=utf-8',
          // Everything the page loads comes from this origin; nothing may frame it.
          'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
          'x-frame-options': 'DENY',
          'referrer-policy': 'no-referrer',
        },
      }),
    { detail: { tags: ['Admin'], summary: 'Usage dashboard (HTML)', description: 'Log in with the admin key; the page reads the admin API.' } },
  ),
)

import { defineConfig } from 'drizzle-kit'

/** Postgres (several instances): its own schema and migrations, beside SQLite's (drizzle.config.ts). */
export default defineConfig({
  dialect: 'postgresql',
  schema: './db/pg/schema.ts',
  out: './db/pg/migrations',
})

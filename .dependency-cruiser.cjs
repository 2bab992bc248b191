/**
 * The import rules of docs/architecture.md, checked in CI (`bun run deps`). Layers only point down;
 * see that page for what each folder is and may use.
 */
const SRC = '^src/'

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'No import circles, type-only imports included.', from: {}, to: { circular: true } },
    { name: 'no-unresolvable', severity: 'error', comment: 'Every import resolves.', from: {}, to: { couldNotResolve: true } },
    {
      name: 'routes-use-no-storage',
      severity: 'error',
      comment: 'Routes validate and delegate: no database schema, no storage handle, no storage adapter.',
      from: { path: '^routes/' },
      to: { path: ['^db/', '^src/storage/', 'drizzle-orm', 'bun:sqlite'] },
    },
    { name: 'db-is-only-the-schema', severity: 'error', comment: 'db/ imports nothing from src/.', from: { path: '^db/' }, to: { path: SRC } },
    {
      name: 'providers-stay-low',
      severity: 'error',
      comment: 'Providers use wire formats, errors, settings types; never routes, limits, usage, http or the layers above.',
      from: { path: '^src/providers/' },
      to: { path: ['^routes/', '^src/(limits|usage|conversations|http|serve|auth|storage|observe)/', '^src/(gateway|app|main|start|cli)\\.ts$'] },
    },
    {
      name: 'domain-without-elysia',
      severity: 'error',
      comment: 'Limits, usage, routing, conversations, providers and wire formats know nothing of the web framework.',
      from: { path: '^src/(limits|usage|routing|conversations|providers|wire)/' },
      to: { path: 'elysia' },
    },
    {
      name: 'wire-is-a-leaf',
      severity: 'error',
      comment: 'Wire formats are pure: they import other wire modules and the error factories, nothing else of ours.',
      from: { path: '^src/wire/' },
      to: { path: SRC, pathNot: ['^src/wire/', '^src/errors\\.ts$'] },
    },
    {
      name: 'dialects-apart',
      severity: 'error',
      comment:
        'A dialect folder (src/wire/<dialect>/) imports nothing from another dialect folder: translations meet in the pivot (src/wire/pivot/, the internal form), so adding a dialect touches no other.',
      from: { path: '^src/wire/([^/]+)/' },
      to: { path: '^src/wire/', pathNot: ['^src/wire/$1/', '^src/wire/pivot/', '^src/wire/json-text\\.ts$'] },
    },
    {
      name: 'wire-knows-no-http-storage-or-limits',
      severity: 'error',
      comment: 'Wire formats know nothing of HTTP, storage or limits: no framework, no driver, no database, no limiter.',
      from: { path: '^src/wire/' },
      to: { path: ['^src/(http|storage|limits|serve|routing|usage)/', 'elysia', 'drizzle-orm', 'bun:sqlite', '^postgres$', '^db/'] },
    },
    {
      name: 'leaves-stay-leaves',
      severity: 'error',
      comment: 'errors.ts, time.ts, root.ts and the settings types import nothing of ours.',
      from: { path: ['^src/errors\\.ts$', '^src/time\\.ts$', '^src/root\\.ts$', '^src/config/types\\.ts$'] },
      to: { path: SRC },
    },
    {
      name: 'only-the-edge-knows-http',
      severity: 'error',
      comment: 'Below the serving layer, nothing imports http/, routes or the composition root.',
      from: { path: '^src/(wire|providers|routing|limits|usage|conversations|auth|config|storage)/' },
      to: { path: ['^src/http/', '^routes/', '^src/serve/', '^src/(gateway|app|main|start|cli)\\.ts$'] },
    },
    {
      name: 'storage-behind-ports',
      severity: 'error',
      comment: 'The domain sees stores through their ports only: which database is behind them is chosen where the gateway is put together.',
      from: { path: SRC, pathNot: ['^src/storage/', '^src/(gateway|cli)\\.ts$'] },
      to: { path: '^src/storage/' },
    },
    {
      name: 'database-only-in-storage',
      severity: 'error',
      comment: 'Only the storage adapters touch the database schema and drivers (db/latency.ts is shared plain data).',
      from: { pathNot: ['^src/storage/', '^db/'] },
      to: { path: ['^db/schema', 'drizzle-orm', 'bun:sqlite', '^db/pg'] },
    },
  ],
  options: {
    // TypeScript 7 has no compiler API for dependency-cruiser to use: swc reads the sources instead.
    parser: 'swc',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    includeOnly: ['^src/', '^routes/', '^db/'],
    moduleSystems: ['es6'],
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
}

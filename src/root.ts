import { dirname, join } from 'node:path'

/**
 * The checkout's root, where the files read at run time live (migrations, Lua scripts, pages, the
 * workers' sources). The bundler writes `import.meta.dir` in as this file's folder, so a build
 * (scripts/build.ts) finds them too, wherever it was written (test/start-built.test.ts).
 */
export const ROOT = dirname(import.meta.dir)

/** A path under the checkout's root. */
export const fromRoot = (...parts: string[]): string => join(ROOT, ...parts)

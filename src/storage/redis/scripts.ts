import { readFileSync } from 'node:fs'
import { fromRoot } from '../../root'

/** A Lua script as Redis runs it: its text, and the SHA-1 that EVALSHA names it by. */
export interface RedisScript {
  name: string
  text: string
  sha: string
}

/** Where the Lua scripts are: read at run time, from source or from a built bundle alike. */
const SCRIPTS_DIR = 'src/storage/redis'
const PRELUDE = readFileSync(fromRoot(SCRIPTS_DIR, 'prelude.lua'), 'utf8')

/** The script in `<name>.lua` beside this file; the limiter's begin with the shared prelude (its keys and helpers). */
export function script(name: string, { prelude = true } = {}): RedisScript {
  const own = readFileSync(fromRoot(SCRIPTS_DIR, `${name}.lua`), 'utf8')
  const text = prelude ? `${PRELUDE}\n${own}` : own
  return { name, text, sha: new Bun.CryptoHasher('sha1').update(text).digest('hex') }
}

/** The limiter's scripts: each one atomic on the Redis server (see the .lua files beside this one). */
export const SCRIPTS = {
  admit: script('admit'),
  settle: script('settle'),
  release: script('release'),
  renew: script('renew'),
  seed: script('seed'),
  targetAdmit: script('target-admit'),
  targetCharge: script('target-charge'),
  targetRest: script('target-rest'),
} as const

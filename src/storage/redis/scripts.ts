import { readFileSync } from 'node:fs'

/** A Lua script as Redis runs it: its text, and the SHA-1 that EVALSHA names it by. */
export interface RedisScript {
  name: string
  text: string
  sha: string
}

const PRELUDE = readFileSync(new URL('./prelude.lua', import.meta.url), 'utf8')

function script(name: string): RedisScript {
  const text = `${PRELUDE}\n${readFileSync(new URL(`./${name}.lua`, import.meta.url), 'utf8')}`
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

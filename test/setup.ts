import { setDefaultTimeout } from 'bun:test'

// The end-to-end suites spawn real servers and browsers: give each test room on a busy 2-core
// machine. (`timeout` in bunfig.toml is not read by `bun test`; this is.)
setDefaultTimeout(30_000)

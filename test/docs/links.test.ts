/**
 * The README is the front door: every page under docs/ can be reached from it by following links,
 * and every link between the repository's files (and every #anchor into a page) leads somewhere.
 * Links to the web are not followed (the suite runs offline).
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { ROOT } from '../support/gateway'
import { TEST_MS } from '../support/hooks'
import { anchors, docPages, type Link, links, readPage } from './markdown'

setDefaultTimeout(TEST_MS)

const PAGES = docPages()
const LINKS = new Map(PAGES.map((page) => [page, links(page)]))

/** Where a link leads, from the repository's root, and its anchor; null for a link off the repository. */
function resolveLink(link: Link): { path: string; anchor: string | null } | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link.target)) return null
  const [file = '', anchor = null] = link.target.split('#') as [string, string?]
  const path = file === '' ? link.page : relative(ROOT, normalize(join(ROOT, dirname(link.page), decodeURIComponent(file))))
  return { path, anchor }
}

describe('the links of the README and docs/', () => {
  test('every link to a file of the repository, and every anchor into a page, leads somewhere', () => {
    const broken: string[] = []
    for (const [page, found] of LINKS) {
      for (const link of found) {
        const to = resolveLink(link)
        if (to === null) continue
        const at = `${page}:${link.line}: ${link.target}`
        if (to.path.startsWith('..') || !existsSync(join(ROOT, to.path))) broken.push(`${at}: no such file`)
        else if (to.anchor !== null && to.path.endsWith('.md') && !anchors(readPage(to.path)).has(to.anchor)) broken.push(`${at}: no such heading`)
      }
    }
    expect(broken).toEqual([])
  })

  test('every page under docs/ is reachable from the README', () => {
    const reached = new Set(['README.md'])
    const queue = ['README.md']
    while (queue.length > 0) {
      const page = queue.shift()!
      for (const link of LINKS.get(page) ?? []) {
        const to = resolveLink(link)
        if (to === null || !PAGES.includes(to.path) || reached.has(to.path)) continue
        if (!statSync(join(ROOT, to.path)).isFile()) continue
        reached.add(to.path)
        queue.push(to.path)
      }
    }
    expect(PAGES.filter((page) => !reached.has(page))).toEqual([])
  })
})

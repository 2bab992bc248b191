/**
 * The README and the pages under docs/, read as a reader sees them: their fenced code blocks (with
 * the section each sits in and the marker that exempts it) and their links.
 */
import { Glob } from 'bun'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../support/gateway'

/** The pages: README.md and every .md under docs/, as paths from the repository's root. */
export function docPages(): string[] {
  return ['README.md', ...[...new Glob('docs/**/*.md').scanSync({ cwd: ROOT })].sort()]
}

export const readPage = (path: string): string => readFileSync(join(ROOT, path), 'utf8')

export interface CodeBlock {
  /** The page, from the repository's root. */
  page: string
  /** The line of the opening fence, from 1. */
  line: number
  /** The fence's language (`ts`, `sh`...), '' when it has none. */
  lang: string
  /** What follows the language on the fence line (`ts chat`: `chat`). */
  tag: string
  code: string
  /** The `## ` section the block sits in ('' above the first). */
  section: string
  /** The reason given by `<!-- not-checked: reason -->` on the line before the fence, or null. */
  notChecked: string | null
}

export const where = (block: CodeBlock): string => `${block.page}:${block.line}`

const MARKER = /^<!--\s*not-checked:(.*?)-->\s*$/

/**
 * Every fenced code block of a page, in order (CommonMark fences: three or more backticks or tildes,
 * closed by at least as many of the same; a fence inside a list item is indented, and so is its code).
 */
export function codeBlocks(page: string, text: string = readPage(page)): CodeBlock[] {
  const lines = text.split('\n')
  const blocks: CodeBlock[] = []
  let section = ''
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const heading = /^## (.*)$/.exec(line)
    if (heading) section = heading[1]!.trim()
    const open = /^( *)(`{3,}|~{3,})\s*([^\s`~]*)\s*(.*)$/.exec(line)
    if (!open) continue
    const indent = open[1]!.length
    const fence = open[2]!
    const close = new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`)
    let end = i + 1
    while (end < lines.length && !close.test(lines[end]!)) end++
    const code = lines
      .slice(i + 1, end)
      .map((l) => l.replace(new RegExp(`^ {0,${indent}}`), ''))
      .join('\n')
    let before = i - 1
    while (before >= 0 && lines[before]!.trim() === '') before--
    const marker = before >= 0 ? MARKER.exec(lines[before]!.trim()) : null
    blocks.push({
      page,
      line: i + 1,
      lang: open[3]!,
      tag: open[4]!.trim(),
      code: code === '' ? '' : `${code}\n`,
      section,
      notChecked: marker ? marker[1]!.trim() : null,
    })
    i = end
  }
  return blocks
}

export interface Link {
  page: string
  line: number
  /** As written: `docs/api.md#errors`, `https://...`, `#section`. */
  target: string
}

/** The links of a page (inline `[text](target)` and `<https://...>`), outside code blocks and code spans. */
export function links(page: string, text: string = readPage(page)): Link[] {
  const found: Link[] = []
  let inFence: string | null = null
  text.split('\n').forEach((line, i) => {
    const fence = /^\s*(`{3,}|~{3,})/.exec(line)
    if (fence) {
      if (inFence === null) inFence = fence[1]!
      else if (fence[1]!.startsWith(inFence)) inFence = null
      return
    }
    if (inFence !== null) return
    const prose = line.replace(/`[^`]*`/g, '``')
    for (const match of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) found.push({ page, line: i + 1, target: match[1]! })
    for (const match of prose.matchAll(/<(https?:\/\/[^>\s]+)>/g)) found.push({ page, line: i + 1, target: match[1]! })
  })
  return found
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

/** The anchors a page's headings give (a repeated heading gets -1, -2... as on GitHub). */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  let inFence = false
  for (const line of text.split('\n')) {
    if (/^\s*(`{3,}|~{3,})/.test(line)) inFence = !inFence
    const heading = inFence ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!heading) continue
    const base = slug(heading[1]!)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

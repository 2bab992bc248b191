/**
 * `bun run bench`'s report: the medians of each scenario's runs per target, the table, and the lines
 * and checks that put rows side by side (the Responses API beside chat completions, each upstream
 * kind beside the openai kind, CPU per request beside the bare proxy's). Pure: it reads results.
 */
import type { WrkResult } from './wrk'

/** A measured run, with the CPU its target's process spent per request in it (µs; null for a target that is not one process of ours). */
export type Sample = WrkResult & { cpuUs: number | null }
export interface Row {
  rps: number
  p50: number
  p99: number
  errors: number
  cpuUs: number | null
}
/** Scenario → target → its medians. */
export type Summary = Record<string, Record<string, Row>>
export type Check = [string, boolean]

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** Each scenario's rows: the medians of its runs, errors added up. */
export function summarize(samples: Record<string, Record<string, Sample[]>>): Summary {
  const summary: Summary = {}
  for (const [scenario, byTarget] of Object.entries(samples)) {
    for (const [target, results] of Object.entries(byTarget)) {
      ;(summary[scenario] ??= {})[target] = {
        rps: median(results.map((r) => r.rps)),
        p50: median(results.map((r) => r.p50)),
        p99: median(results.map((r) => r.p99)),
        errors: results.reduce((sum, r) => sum + r.errors, 0),
        cpuUs: results[0]!.cpuUs === null ? null : median(results.map((r) => r.cpuUs!)),
      }
    }
  }
  return summary
}

const pad = (s: string, n: number) => s.padEnd(n)
/** The row a target's overhead is measured over: its kind's own fake for another kind, else the openai mock. */
const directRowOf = (target: string) => /^(\w+) kind$/.exec(target)?.[1]

/** One line of the table: the target's medians and its ratios to the bare proxy, the JS relay and the upstream called directly. */
function tableLine(scenario: string, target: string, r: Row, byTarget: Record<string, Row>): string {
  const bare = byTarget['bare proxy']!
  const relay = byTarget['JS relay']
  const kind = directRowOf(target)
  const direct = (kind ? byTarget[`direct ${kind}`] : byTarget.direct)!
  const isDirect = target === 'direct' || target.startsWith('direct ')
  const vsBare = isDirect ? '' : (r.rps / bare.rps).toFixed(2)
  const vsRelay = isDirect || target === 'bare proxy' || !relay ? '' : (r.rps / relay.rps).toFixed(2)
  const vsDirect = isDirect ? '' : (r.rps / direct.rps).toFixed(2)
  const p50d = isDirect ? '' : `+${(r.p50 - direct.p50).toFixed(3)}`
  const p99d = isDirect ? '' : `+${(r.p99 - direct.p99).toFixed(3)}`
  // CPU per request of the target's own process (the load generator and the upstream not counted), and over the bare proxy's.
  const cpu = r.cpuUs === null ? '' : r.cpuUs.toFixed(0)
  const cpuVsBare = r.cpuUs === null || bare.cpuUs === null || target === 'bare proxy' ? '' : (r.cpuUs / bare.cpuUs).toFixed(2)
  return `${pad(scenario, 11)}${pad(target, 15)}${r.rps.toFixed(0).padStart(9)}${r.p50.toFixed(3).padStart(9)}${r.p99.toFixed(3).padStart(9)}${String(r.errors).padStart(8)}${vsBare.padStart(8)}${vsRelay.padStart(9)}${vsDirect.padStart(10)}${p50d.padStart(9)}${p99d.padStart(9)}${cpu.padStart(9)}${cpuVsBare.padStart(8)}`
}

/** The table's heading and every row. */
export function resultTable(summary: Summary, runs: number, seconds: number): string[] {
  const lines = [
    `chatgate benchmark: medians of ${runs} run(s), ${seconds} s each, wrk on 127.0.0.1 (${new Date().toISOString()})`,
    '',
    `${pad('scenario', 11)}${pad('target', 15)}${'req/s'.padStart(9)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'errors'.padStart(8)}${'÷ bare'.padStart(8)}${'÷ relay'.padStart(9)}${'÷ direct'.padStart(10)}${'p50 Δ'.padStart(9)}${'p99 Δ'.padStart(9)}${'CPU µs'.padStart(9)}${'÷ bare'.padStart(8)}`,
  ]
  for (const [scenario, byTarget] of Object.entries(summary)) {
    for (const [target, r] of Object.entries(byTarget)) lines.push(tableLine(scenario, target, r, byTarget))
  }
  return lines
}

/** The Responses API's overhead over the bare proxy (added p50), beside chat completions' in the same run. */
export function responsesOverhead(summary: Summary): { lines: string[]; checks: Check[] } {
  const added = (row: Record<string, { p50: number }> | undefined, target: string) => (row?.[target]?.p50 ?? NaN) - (row?.['bare proxy']?.p50 ?? NaN)
  const rows = [
    ['JSON', added(summary['resp json'], 'native'), added(summary['resp json'], 'chatgate'), added(summary['json c32'], 'chatgate')],
    ['stream', added(summary['resp strm'], 'native'), added(summary['resp strm'], 'chatgate'), added(summary['stream c32'], 'chatgate')],
  ] as const
  return {
    lines: rows.map(
      ([kind, native, translated, chat]) =>
        `Responses API ${kind} c32, p50 added over the bare proxy: native ${native.toFixed(3)} ms, translated ${translated.toFixed(3)} ms; chat completions ${chat.toFixed(3)} ms`,
    ),
    checks: rows.map(([kind, native, translated, chat]) => [
      `Responses ${kind} overhead (native and translated) within 10% of chat completions'`,
      Math.max(native, translated) <= chat * 1.1,
    ]),
  }
}

/** Each other kind's overhead over its own fake, beside the openai kind's over the mock; the check is the gemini kind's. */
export function kindOverhead(summary: Summary, kinds: string[]): { lines: string[]; checks: Check[] } {
  const overOwnDirect = (row: Record<string, { p50: number }> | undefined, target: string, direct: string) =>
    (row?.[target]?.p50 ?? NaN) - (row?.[direct]?.p50 ?? NaN)
  const rows = kinds.flatMap((kind) =>
    (['json c32', 'stream c32'] as const).map((scenario) => ({
      kind,
      scenario,
      added: overOwnDirect(summary[scenario], `${kind} kind`, `direct ${kind}`),
      openai: overOwnDirect(summary[scenario], 'chatgate', 'direct'),
    })),
  )
  return {
    lines: rows.map(
      ({ kind, scenario, added, openai }) =>
        `${kind} kind ${scenario}, p50 added over its own upstream: ${added.toFixed(3)} ms; openai kind ${openai.toFixed(3)} ms`,
    ),
    checks: rows
      .filter(({ kind }) => kind === 'gemini')
      .map(({ kind, scenario, added, openai }) => [`${kind} kind ${scenario} overhead within 10% of the openai kind's`, added <= openai * 1.1]),
  }
}

/**
 * CPU per request side by side: the lean floor, every inbound API and upstream kind beside chat
 * completions to the openai mock, and each over the bare proxy's (what the /proc counters say,
 * whatever else loads the machine); the checks are chat completions' against issue 31's 1.5x.
 */
export function cpuReport(summary: Summary, kinds: string[]): { lines: string[]; checks: Check[] } {
  const cpuOf = (scenario: string, target: string) => summary[scenario]?.[target]?.cpuUs ?? null
  const cpuRatio = (scenario: string, target: string) => {
    const cpu = cpuOf(scenario, target)
    const bare = cpuOf(scenario, 'bare proxy')
    return cpu === null || bare === null ? null : cpu / bare
  }
  const rows: [string, string, string][] = [
    ['lean floor JSON (the durable work alone, lean-floor.ts)', 'json c32', 'lean floor'],
    ['chat completions JSON', 'json c32', 'chatgate'],
    ['chat completions stream', 'stream c32', 'chatgate'],
    ['Responses JSON, translated', 'resp json', 'chatgate'],
    ['Responses JSON, native', 'resp json', 'native'],
    ['Responses stream, translated', 'resp strm', 'chatgate'],
    ['Responses stream, native', 'resp strm', 'native'],
    ['cache hit JSON', 'json c32', 'cache hit'],
    ['cache hit stream', 'stream c32', 'cache hit'],
    ...kinds.flatMap((kind) => [
      [`${kind} kind JSON`, 'json c32', `${kind} kind`] as [string, string, string],
      [`${kind} kind stream`, 'stream c32', `${kind} kind`] as [string, string, string],
    ]),
  ]
  const lines: string[] = []
  for (const [label, scenario, target] of rows) {
    const cpu = cpuOf(scenario, target)
    const ratio = cpuRatio(scenario, target)
    if (cpu !== null) lines.push(`CPU per request, ${label}: ${cpu.toFixed(0)} µs${ratio === null ? '' : ` (${ratio.toFixed(2)} x the bare proxy's)`}`)
  }
  const checks = (['json c32', 'stream c32'] as const).flatMap((scenario): Check[] => {
    const ratio = cpuRatio(scenario, 'chatgate')
    return ratio === null ? [] : [[`${scenario} CPU per request <= 1.5 x bare proxy's (${ratio.toFixed(2)} x)`, ratio <= 1.5]]
  })
  return { lines, checks }
}

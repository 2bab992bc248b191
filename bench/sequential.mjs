// Sequential requests from Node's fetch, one target after another in each round (direct, then each
// target), the median of each round's latencies, and over the rounds the median of each target's
// round median minus the direct one's: the method of an independent public gateway benchmark.
// Usage: node bench/sequential.mjs <rounds> <requests per round> <json: [{name, url, headers, body}]>
const [rounds, perRound] = [Number(process.argv[2]), Number(process.argv[3])]
const targets = JSON.parse(process.argv[4])

const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

async function roundOf(target) {
  const times = []
  for (let i = 0; i < perRound; i++) {
    const started = performance.now()
    const response = await fetch(target.url, { method: 'POST', headers: { 'content-type': 'application/json', ...target.headers }, body: target.body })
    await response.text()
    if (!response.ok) throw new Error(`${target.name}: status ${response.status}`)
    times.push(performance.now() - started)
  }
  return median(times)
}

for (const target of targets) await roundOf(target) // warm-up: connections, JIT
const medians = Object.fromEntries(targets.map((t) => [t.name, []]))
for (let round = 0; round < rounds; round++) for (const target of targets) medians[target.name].push(await roundOf(target))
const direct = targets[0].name
const out = {}
for (const target of targets) {
  out[target.name] = {
    medianMs: median(medians[target.name]),
    addedMs: target.name === direct ? 0 : median(medians[target.name].map((m, i) => m - medians[direct][i])),
  }
}
console.log(JSON.stringify(out))

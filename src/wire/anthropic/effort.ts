/** Anthropic's thinking and output effort as OpenAI's `reasoning_effort`. */
import type * as Anthropic from './types'

/** `reasoning_effort` values from least to most effort. */
const EFFORTS = ['low', 'medium', 'high', 'xhigh']

/** An effort no higher than `max` (the upstream's `max_reasoning_effort`); values outside the scale pass as they are. */
function capEffort(effort: string, max: string): string {
  const at = EFFORTS.indexOf(effort)
  const cap = EFFORTS.indexOf(max)
  return at !== -1 && cap !== -1 && at > cap ? max : effort
}

/**
 * The effort for a thinking budget, monotonic in the budget: up to 1024 tokens low, up to 4096
 * medium, above that high, and above 16384 xhigh, which `capEffort` keeps for upstreams that take it.
 */
export const effortOfBudget = (budget: number, max: string): string =>
  capEffort(budget <= 1024 ? 'low' : budget <= 4096 ? 'medium' : budget <= 16384 ? 'high' : 'xhigh', max)

/**
 * Anthropic's thinking (a budget, or adaptive) or output effort as OpenAI's reasoning_effort, at
 * most `max`. Adaptive thinking without an effort is medium: asked-for thinking is never dropped.
 */
export function effortOf(request: Anthropic.MessagesRequest, max: string): string | undefined {
  const effort = (request.output_config as { effort?: unknown } | undefined)?.effort
  if (typeof effort === 'string') return capEffort(effort === 'max' ? 'xhigh' : effort, max)
  const thinking = request.thinking as { type?: string; budget_tokens?: number } | undefined
  if (thinking?.type === 'adaptive') return 'medium'
  if (thinking?.type !== 'enabled' || typeof thinking.budget_tokens !== 'number') return undefined
  return effortOfBudget(thinking.budget_tokens, max)
}

/** Anthropic's model records (GET /v1/models with an `anthropic-version` header, as Claude Code asks for them). */

export interface AnthropicModel {
  type: 'model'
  id: string
  display_name: string
  /** RFC 3339. */
  created_at: string
}

/** An alias as Anthropic's model record: its name is its display name. */
export const anthropicModel = (model: { id: string; created: number }): AnthropicModel => ({
  type: 'model',
  id: model.id,
  display_name: model.id,
  created_at: new Date(model.created * 1000).toISOString(),
})

/** Every alias as Anthropic's list: one page (`has_more` false), first and last ids named. */
export function anthropicModelList(models: readonly { id: string; created: number }[]) {
  const data = models.map(anthropicModel)
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null }
}

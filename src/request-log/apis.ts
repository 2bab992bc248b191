/** The inbound APIs the request log records, by route template. */
const APIS: Record<string, string> = {
  '/v1/chat/completions': 'chat.completions',
  '/v1/messages': 'messages',
  '/v1/messages/count_tokens': 'count_tokens',
  '/v1/responses': 'responses',
  '/v1/responses/:id': 'responses',
  '/v1/responses/:id/input_items': 'responses',
  '/v1/responses/input_tokens': 'responses.input_tokens',
  '/v1/embeddings': 'embeddings',
}

/**
 * The inbound API a request is to (`chat.completions`, `messages`, `gemini.generateContent`...), from
 * the route that matched and its path; undefined for every other route (admin, models, usage,
 * health), which the request log does not record.
 */
export function inboundApi(route: string, path: string): string | undefined {
  const api = APIS[route]
  if (api !== undefined || !route.startsWith('/v1beta/models/')) return api
  // Gemini's method is the path's last colon part: /v1beta/models/local/echo:streamGenerateContent.
  const method = /:([A-Za-z]+)$/.exec(path)?.[1]
  return method === undefined ? 'gemini' : `gemini.${method}`
}

import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { upstreamHttpError } from '../../src/providers/errors'
import { openaiErrorBody } from '../../src/wire/openai-chat/errors'
import { TEST_MS } from '../support/hooks'
import { openapiErrors } from '../support/openapi'

setDefaultTimeout(TEST_MS)

// Issue 33: an upstream's 4xx reached the caller with the upstream's message but not its `param`
// and `code`: OpenAI's `{"param": "messages", "code": "context_length_exceeded"}` became
// `param: null, code: "upstream_rejected"`, so a client could not tell which field, or why. The
// upstream's own param and code now go on; without a code of its own, ours still says where the
// refusal came from. (test/conformance/errors.test.ts shows it through a gateway on every route.)

const body = (error: Record<string, unknown>) => JSON.stringify({ error })
const relayed = (status: number, text: string) => openaiErrorBody(upstreamHttpError('up', status, new Headers(), text))

describe("an upstream's 4xx keeps its param and code", () => {
  test("OpenAI's context-length 400: its param and code", () => {
    const answer = relayed(400, body({ message: 'too long', type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' }))
    expect(answer).toEqual({ error: { message: 'too long', type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } })
    expect(openapiErrors('ErrorResponse', answer)).toBeNull()
  })

  test('both null upstream: param null, the code ours', () => {
    const answer = relayed(422, body({ message: 'no', type: 'invalid_request_error', param: null, code: null }))
    expect(answer.error).toMatchObject({ param: null, code: 'upstream_rejected' })
  })

  test("a body not in OpenAI's shape (Anthropic's, an HTML page): param null, the code ours", () => {
    expect(relayed(400, JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'x' } })).error).toMatchObject({
      param: null,
      code: 'upstream_rejected',
    })
    expect(relayed(404, '<html>Not Found</html>').error).toMatchObject({ param: null, code: 'upstream_rejected' })
  })
})

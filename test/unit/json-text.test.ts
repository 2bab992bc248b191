import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { applyEdits, outlineJson, removal, replacement } from '../../src/wire/json-text'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)

describe('outlineJson', () => {
  test('finds each top-level member and its value span, whatever the spacing, escapes and nesting inside', () => {
    const text =
      ' { "model" : "local/echo" , "messages":[{"role":"user","content":"say \\"model\\": \\"x\\"","model":"nested"}],\n "n": 5 ,"o":{"model":"deep"} } '
    const { members, duplicate, tooDeep } = outlineJson(text, 64)
    expect(tooDeep).toBe(false)
    expect(duplicate).toBeNull()
    expect([...members!.keys()]).toEqual(['model', 'messages', 'n', 'o'])
    const value = (key: string) => text.slice(members!.get(key)!.valueStart, members!.get(key)!.valueEnd)
    expect(value('model')).toBe('"local/echo"')
    expect(value('n')).toBe('5')
    expect(value('o')).toBe('{"model":"deep"}')
    expect(JSON.parse(value('messages'))).toEqual(JSON.parse(text).messages)
  })

  test('a duplicate top-level key is reported, also when spelled with an escape; nested duplicates are not', () => {
    expect(outlineJson('{"model":"a","x":{"k":1,"k":2},"model":"b"}', 64).duplicate).toBe('model')
    expect(outlineJson('{"model":"a","mo\\u0064el":"b"}', 64).duplicate).toBe('model')
    expect(outlineJson('{"a":{"k":1,"k":2}}', 64).duplicate).toBeNull()
  })

  test('stops at the first level past the limit: 64 levels pass, 65 do not', () => {
    expect(outlineJson(nested(64), 64).tooDeep).toBe(false)
    expect(outlineJson(nested(65), 64).tooDeep).toBe(true)
    expect(outlineJson(`{"a":${nested(63)}}`, 64).tooDeep).toBe(false)
    expect(outlineJson(`{"a":${nested(64)}}`, 64).tooDeep).toBe(true)
    // Brackets inside strings do not count.
    expect(outlineJson(`{"a":"${'['.repeat(1000)}"}`, 64).tooDeep).toBe(false)
  })

  test('text that is not an object or not JSON gives no members and never throws', () => {
    expect(outlineJson('[1,2]', 64).members).toBeNull()
    for (const bad of ['', '{', '{"a', '{"a":', '{"a\\', '"\\u12"', '{"\\uZZZZ":1}', '}}}']) expect(() => outlineJson(bad, 64)).not.toThrow()
  })
})

describe('editing members', () => {
  test('a replacement changes only that value; a removal takes its comma along; edits apply in any order', () => {
    const text = '{"model": "local/echo", "seed": 18446744073709551615, "usage" : null}'
    const { members } = outlineJson(text, 64)
    const model = members!.get('model')!
    const usage = members!.get('usage')!
    expect(applyEdits(text, [replacement(model, '"gpt-4o"')])).toBe('{"model": "gpt-4o", "seed": 18446744073709551615, "usage" : null}')
    expect(applyEdits(text, [replacement(model, '"m"'), removal(text, usage)])).toBe('{"model": "m", "seed": 18446744073709551615}')
    expect(applyEdits(text, [removal(text, model)])).toBe('{ "seed": 18446744073709551615, "usage" : null}')
    const only = '{"usage":null}'
    expect(applyEdits(only, [removal(only, outlineJson(only, 64).members!.get('usage')!)])).toBe('{}')
  })

  test('edits in any order, two or more, each apply to the original text at its own offsets', () => {
    const text = '{"a":1,"b":2,"c":3}'
    const { members } = outlineJson(text, 64)
    const [a, b, c] = ['a', 'b', 'c'].map((key) => members!.get(key)!)
    expect(applyEdits(text, [replacement(c!, '30'), replacement(a!, '10')])).toBe('{"a":10,"b":2,"c":30}')
    expect(applyEdits(text, [replacement(a!, '"x"'), replacement(c!, '"z"')])).toBe('{"a":"x","b":2,"c":"z"}')
    expect(applyEdits(text, [replacement(b!, '[]'), removal(text, c!), replacement(a!, 'null')])).toBe('{"a":null,"b":[]}')
    expect(applyEdits(text, [{ start: text.length - 1, end: text.length - 1, text: ',"d":4' }, replacement(a!, '0')])).toBe('{"a":0,"b":2,"c":3,"d":4}')
  })
})

/**
 * The binary `application/vnd.amazon.eventstream` framing of ConverseStream (AWS's event-stream
 * encoding: a 12-byte prelude of total length, headers length and the prelude's CRC32, the headers,
 * the payload, and the whole message's CRC32), cut into messages as bytes arrive. The codec of
 * `@smithy/core/event-streams` checks both CRCs of each message; the prelude's is also checked here
 * before its length is trusted, so a corrupt length never makes the gateway wait for, or hold,
 * bytes that will not come.
 */
import type { Message } from '@smithy/core/event-streams'
import { type AwsSdk, awsSdk } from './sdk'

const PRELUDE_BYTES = 12
/** Prelude and message CRC: the smallest message there is. */
const MIN_MESSAGE_BYTES = 16

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** A message that does not decode: a CRC that does not match, a length out of bounds. Ends the stream. */
export class EventStreamCorrupt extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'EventStreamCorrupt'
  }
}

function preludeCrcMatches(Crc32: AwsSdk['Crc32'], bytes: Uint8Array): boolean {
  const crc = new Crc32()
  crc.update(bytes.subarray(0, 8))
  return crc.digestSync() === new DataView(bytes.buffer, bytes.byteOffset + 8, 4).getUint32(0, false)
}

/** A splitter of messages of at most `maxMessageBytes`, once the SDK's codec is loaded. */
export const messageSplitter = async (maxMessageBytes: number): Promise<MessageSplitter> => new MessageSplitter(maxMessageBytes, await awsSdk())

/** Cuts bytes into event-stream messages, keeping what is left of a message that is not whole yet. */
export class MessageSplitter {
  private buffer: Uint8Array = new Uint8Array(0)
  private readonly codec: InstanceType<AwsSdk['EventStreamCodec']>

  constructor(
    private readonly maxMessageBytes: number,
    private readonly sdk: AwsSdk,
  ) {
    this.codec = new sdk.EventStreamCodec(
      (bytes) => decoder.decode(bytes),
      (text) => encoder.encode(text),
    )
  }

  /**
   * The whole messages `bytes` completes, decoded, and the corruption that stopped the cutting, if
   * any: the messages before a bad one are still good, and are handed on before the stream ends.
   */
  push(bytes: Uint8Array): { messages: Message[]; corrupt: EventStreamCorrupt | null } {
    this.buffer = this.buffer.length === 0 ? bytes : concat(this.buffer, bytes)
    const messages: Message[] = []
    while (this.buffer.length >= PRELUDE_BYTES) {
      const length = new DataView(this.buffer.buffer, this.buffer.byteOffset, 4).getUint32(0, false)
      let problem: string | null = null
      if (!preludeCrcMatches(this.sdk.Crc32, this.buffer)) problem = 'an event-stream message failed its prelude CRC check'
      else if (length < MIN_MESSAGE_BYTES) problem = `an event-stream message says it is ${length} bytes long`
      else if (length > this.maxMessageBytes) problem = `an event-stream message is larger than ${this.maxMessageBytes} bytes`
      if (problem !== null) return { messages, corrupt: new EventStreamCorrupt(problem) }
      if (this.buffer.length < length) break
      try {
        messages.push(this.codec.decode(this.buffer.subarray(0, length)))
      } catch {
        return { messages, corrupt: new EventStreamCorrupt('an event-stream message failed its message CRC check') }
      }
      this.buffer = this.buffer.subarray(length)
    }
    return { messages, corrupt: null }
  }

  /** Whether bytes of an unfinished message are held: at the body's end, the stream was cut. */
  get pending(): boolean {
    return this.buffer.length > 0
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length)
  out.set(a, 0)
  out.set(b, a.length)
  return out
}

/** A header's string value ('' when absent or not a string). */
export function headerText(message: Message, name: string): string {
  const header = message.headers[name]
  return header?.type === 'string' ? header.value : ''
}

/** A message's payload as text. */
export const payloadText = (message: Message): string => decoder.decode(message.body)

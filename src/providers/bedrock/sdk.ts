/**
 * AWS's SigV4 signer and event-stream codec, loaded on first use: loading them takes about 50 ms of
 * every start, which a gateway without Bedrock upstreams would pay for nothing.
 */
import type { EventStreamCodec } from '@smithy/core/event-streams'

export interface AwsSdk {
  Sha256: typeof import('@smithy/core/checksum').Sha256
  Crc32: typeof import('@smithy/core/checksum').Crc32
  EventStreamCodec: typeof EventStreamCodec
  SignatureV4: typeof import('@smithy/signature-v4').SignatureV4
}

let loading: Promise<AwsSdk> | null = null

/** The SDK's parts, loaded once. */
export function awsSdk(): Promise<AwsSdk> {
  loading ??= Promise.all([import('@smithy/core/checksum'), import('@smithy/core/event-streams'), import('@smithy/signature-v4')]).then(
    ([checksum, eventStreams, signature]) => ({
      Sha256: checksum.Sha256,
      Crc32: checksum.Crc32,
      EventStreamCodec: eventStreams.EventStreamCodec,
      SignatureV4: signature.SignatureV4,
    }),
  )
  return loading
}

import { readFileSync } from 'node:fs'

/** Whether a connection to the port on 127.0.0.1 is refused (nothing listens there). */
async function refuses(port: number): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
    socket.end()
    return false
  } catch {
    return true
  }
}

/**
 * A port on 127.0.0.1 that refuses connections: an upstream that is down. It is taken below the
 * kernel's ephemeral range, where the tests' own servers (all started on port 0) never listen. A
 * port freed by closing a listener could be handed to the next server a test starts, which would
 * then answer in its place.
 */
export async function refusingPort(): Promise<number> {
  const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
  for (let port = low - 1; port > low - 100; port--) if (await refuses(port)) return port
  throw new Error(`no port below ${low} refuses connections`)
}

/**
 * A phone-home trap for a Node client (loaded with NODE_OPTIONS=--require, so child processes it
 * spawns load it too): every outgoing TCP connection and DNS lookup to anything but the loopback
 * address is written to the file CHATGATE_NET_TRAP names and refused at once, so nothing leaves
 * 127.0.0.1 and the test can assert that nothing tried to.
 */
const net = require('node:net')
const dns = require('node:dns')
const fs = require('node:fs')

const file = process.env.CHATGATE_NET_TRAP
const LOCAL = /^(127\.\d+\.\d+\.\d+|::1|localhost|::ffff:127\.\d+\.\d+\.\d+)$/i
const record = (what) => {
  if (file) fs.appendFileSync(file, `${what}\n`)
}

const connect = net.Socket.prototype.connect
net.Socket.prototype.connect = function (...args) {
  const options = typeof args[0] === 'object' && args[0] !== null ? args[0] : { port: args[0], host: typeof args[1] === 'string' ? args[1] : 'localhost' }
  if (options.path === undefined) {
    const host = options.host ?? 'localhost'
    if (!LOCAL.test(host)) {
      record(`connect ${host}:${options.port}`)
      process.nextTick(() => this.destroy(Object.assign(new Error(`blocked by the test's trap: ${host}`), { code: 'ECONNREFUSED' })))
      return this
    }
  }
  return connect.apply(this, args)
}

for (const name of ['lookup', 'resolve', 'resolve4', 'resolve6']) {
  const original = dns[name]
  dns[name] = function (host, ...rest) {
    if (typeof host === 'string' && !LOCAL.test(host)) {
      record(`dns ${host}`)
      const callback = rest.find((arg) => typeof arg === 'function')
      const error = Object.assign(new Error(`blocked by the test's trap: ${host}`), { code: 'ENOTFOUND' })
      if (callback) process.nextTick(() => callback(error))
      return
    }
    return original.call(this, host, ...rest)
  }
}
const lookup = dns.promises.lookup
dns.promises.lookup = function (host, ...rest) {
  if (typeof host === 'string' && !LOCAL.test(host)) {
    record(`dns ${host}`)
    return Promise.reject(Object.assign(new Error(`blocked by the test's trap: ${host}`), { code: 'ENOTFOUND' }))
  }
  return lookup.call(this, host, ...rest)
}

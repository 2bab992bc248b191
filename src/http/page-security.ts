const sha256Base64 = (text: string) => new Bun.CryptoHasher('sha256').update(text).digest('base64')

/**
 * Headers for an HTML page the gateway serves: a Content-Security-Policy that lets scripts run only
 * from this origin or when they are exactly the page's own inline scripts (by hash), frame denial,
 * and no MIME sniffing.
 */
export function pageSecurityHeaders(html: string): Record<string, string> {
  const inline = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((match) => `'sha256-${sha256Base64(match[1]!)}'`)
  return {
    'content-security-policy': [
      "default-src 'self'",
      `script-src 'self'${inline.map((hash) => ` ${hash}`).join('')}`,
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "form-action 'none'",
    ].join('; '),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  }
}

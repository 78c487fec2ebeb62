import type { IncomingMessage } from 'node:http';

/**
 * Rewrites a request sent with an absolute-form target (`POST http://host:port/v1/messages`, as a
 * client configured to use this server as a proxy sends it) to the origin form every route
 * matches on (`/v1/messages?beta=true`): RFC 9112 §3.2.2 — a server MUST accept the absolute
 * form, and the target's authority replaces the Host header. Without it such a model call got
 * the API's 404 "no route POST /v1/messages" (fresh tester). The path and query are taken as
 * sent, byte for byte — not through a URL parser, which would resolve `..` and `%2e%2e` segments
 * that an origin-form target keeps (and routes refuse), so both forms reach the same route
 * (fresh tester: `http://x/../api/jobs` was served as /api/jobs); a fragment is dropped; the
 * authority's user information is left out of Host, and an authority that is no valid host
 * leaves the Host header as sent. Origin-form (`/…`) and asterisk-form (`*`)
 * targets, and any other scheme, are left as they are.
 */
export function toOriginForm(req: IncomingMessage): void {
  const url = req.url;
  if (url === undefined || url.startsWith('/')) return;
  const m = ABSOLUTE.exec(url);
  if (m === null) return;
  const [, authority, rest] = m as unknown as [string, string, string];
  const path = rest.split('#')[0]!;
  req.url = path === '' ? '/' : path.startsWith('?') ? `/${path}` : path;
  const host = authority.slice(authority.lastIndexOf('@') + 1);
  // an authority no URL can hold (`x:99999`) leaves the request's own Host: the server's routes
  // build a URL from it (Hono), and answered such a target with a bare 400 (fresh tester)
  if (URL.canParse(`http://${host}/`)) req.headers.host = host;
}

/** `http://` or `https://` (any case), the authority up to the first `/`, `?` or `#`, and the rest. */
const ABSOLUTE = /^https?:\/\/([^/?#]*)(.*)$/is;

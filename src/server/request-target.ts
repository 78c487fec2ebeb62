import type { IncomingMessage } from 'node:http';

/**
 * Rewrites a request sent with an absolute-form target (`POST http://host:port/v1/messages`, as a
 * client configured to use this server as a proxy sends it) to the origin form every route
 * matches on (`/v1/messages?beta=true`): RFC 9112 §3.2.2 — a server MUST accept the absolute
 * form, and the target's authority replaces the Host header. Without it such a model call got
 * the API's 404 "no route POST /v1/messages" (fresh tester). Origin-form (`/…`) and asterisk-form
 * (`*`) targets are left as they are; a target that is not a valid http(s) URL too (the routes refuse it).
 */
export function toOriginForm(req: IncomingMessage): void {
  const url = req.url;
  if (url === undefined || url.startsWith('/') || !/^https?:\/\//i.test(url)) return;
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return;
  }
  req.url = `${target.pathname}${target.search}`;
  req.headers.host = target.host;
}

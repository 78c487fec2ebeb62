import type { IncomingHttpHeaders } from 'node:http';

/**
 * The gateway's own request and reply shapes, free of web `Request`/`Response`/streams so the
 * `/v1/*` hot path runs on plain node:http (node-adapter.ts) while tests and embedders can still
 * call it through `fetch` (web-adapter.ts). Header names are lower case.
 */

/** One incoming gateway call, its body already read whole. */
export interface GatewayRequest {
  method: string;
  /** Path without the query, e.g. `/v1/messages`. */
  path: string;
  /** Path and query as received, e.g. `/v1/messages?beta=true`. */
  pathAndQuery: string;
  /** node:http style headers (lower-case names; repeated ones as arrays). */
  headers: IncomingHttpHeaders;
  /**
   * The body bytes, at most the adapter's size limit (config `maxRequestBytes`); a bigger body
   * is cut there and {@link bodyBytes} tells its real size.
   */
  body: Buffer;
  /** Size of the whole body in bytes (> body.byteLength when the body was over the limit). */
  bodyBytes: number;
  /**
   * True when the body went past the size limit before its end and was refused there (a
   * chunked upload): `bodyBytes` is what had arrived by then, the whole is larger.
   */
  bodyCut?: boolean;
  /**
   * Aborted when the client goes away (aborts the upstream call). An AbortSignal fits; the
   * node adapter passes a lighter one ({@link CallSignal}).
   */
  signal: CallSignal;
}

/**
 * What the gateway reads of a call's cancellation (a web AbortSignal fits): `aborted`, and an
 * `abort` listener that runs once when it aborts (one added after that never runs). The node
 * adapter's own (node-adapter.ts) is a plain object: an AbortController whose signal gets an
 * abort listener added and removed costs ~4 µs of CPU on Node 20 (measured alone; more with
 * its garbage at 64 clients, bench/gateway-cpu.bench.js), on every call, for the rare client
 * that hangs up.
 */
export interface CallSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
  /**
   * Aborts the call from the gateway's side, as the client going away would (a cancelled job's
   * live calls: live-calls.ts). The node adapter's signal has it; gateway.ts gives the web
   * adapter's one. Absent: the call cannot be aborted that way.
   */
  abort?(): void;
}

/**
 * A reply: status, headers, and either a whole `body` or a live `stream` of chunks (SSE) that the
 * adapter writes as they come. `null` body with no stream = empty.
 */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: Buffer | null;
  stream?: AsyncIterable<Uint8Array>;
}

/**
 * The query of a request's `pathAndQuery`, `?` included (`?api-version=...`), or '' without one:
 * what the routes pass upstream after their own path, and what `GET /v1/models` pages by.
 */
export function queryOf(pathAndQuery: string): string {
  const q = pathAndQuery.indexOf('?');
  return q < 0 ? '' : pathAndQuery.slice(q);
}

/** A header of a node-style header record (first value when repeated), or undefined. */
export function headerOf(h: IncomingHttpHeaders, name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A JSON reply of `value` (`content-type: application/json`) plus `extra` headers. */
export function jsonReply(status: number, value: unknown, extra: Record<string, string> = {}): Reply {
  return { status, headers: { 'content-type': 'application/json', ...extra }, body: Buffer.from(JSON.stringify(value)) };
}

/** Drops a reply without reading it (a live upstream stream is closed). */
export async function discardReply(r: Reply): Promise<void> {
  if (!r.stream) return;
  const s = r.stream as { destroy?: () => void };
  if (typeof s.destroy === 'function') s.destroy();
  else await r.stream[Symbol.asyncIterator]().return?.();
}

/** True when the reply is server-sent events. */
export function isEventStream(r: Reply): boolean {
  return (r.headers['content-type'] ?? '').toLowerCase().startsWith('text/event-stream');
}

/** {@link Reply} for retry.ts `withRetries`. */
export const REPLY_OPS = {
  status: (r: Reply) => r.status,
  header: (r: Reply, name: string) => r.headers[name],
  discard: discardReply,
  withHeader: (r: Reply, name: string, value: string): Reply => ({ ...r, headers: { ...r.headers, [name]: value } }),
};

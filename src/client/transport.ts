import type { z } from 'zod';
import { describeIssues } from '../protocol/index.js';
import { ApiError, apiErrorFromResponse, contentTypeOf } from './errors.js';
import { causeOf } from './util.js';

/** Options of {@link FlotillaClient}. */
export interface FlotillaClientOptions {
  /** Base URL of the control plane, e.g. `http://127.0.0.1:8787` (a trailing slash is fine). */
  url: string;
  /**
   * API token (`fla_...`), sent as `Authorization: Bearer`. Leave it out in a browser signed in
   * with a session cookie (the dashboard): the cookie goes along with same-origin requests.
   */
  token?: string;
  /** fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /** First delay before reconnecting a dropped event stream, ms (doubles per failure up to 5 s). Default 250. */
  reconnectDelayMs?: number;
  /** Consecutive failed reconnects (without a new event in between) before followEvents gives up. Default 10. */
  maxReconnects?: number;
}

/**
 * What every part of the client SDK shares (client.ts composes the parts): the checked base
 * URL and API token, and `request`, which sends one JSON call and validates the reply with a
 * protocol schema. Errors: {@link ApiError} on an error reply (the server's code, message and
 * field), on an unreachable server (`code: 'network'`, status 0) and on a reply that does not
 * match the protocol (`code: 'bad_response'`).
 * @throws Error from the constructor when `url` is not an http(s) URL, holds a user name or
 *   password, or `token` cannot be a bearer token (RFC 6750 §2.1).
 */
export abstract class ApiTransport {
  readonly url: string;
  protected readonly token: string | undefined;
  protected readonly fetchFn: typeof fetch;
  protected readonly reconnectDelayMs: number;
  protected readonly maxReconnects: number;

  constructor(opts: FlotillaClientOptions) {
    if (!opts.url) throw new Error('FlotillaClient: url is required');
    let parsed: URL;
    try {
      parsed = new URL(opts.url);
    } catch {
      throw new Error(`FlotillaClient: url "${opts.url}" is not a valid URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new Error(`FlotillaClient: url "${opts.url}" must start with http:// or https://`);
    }
    // The URL is printed in errors: a user name or password in it would leak there.
    if (parsed.username || parsed.password) throw new Error('FlotillaClient: url must not hold a user name or password (pass the API token as the token)');
    // RFC 6750 §2.1 b64token; anything else cannot go in an Authorization header, and the
    // runtime's error about it would quote the header, token included.
    if (opts.token !== undefined && !/^[A-Za-z0-9\-._~+/]+=*$/.test(opts.token)) {
      throw new Error('FlotillaClient: token holds characters an HTTP bearer token may not (RFC 6750: letters, digits and -._~+/ then =); check FLOTILLA_TOKEN / --token');
    }
    this.url = opts.url.replace(/\/+$/, '');
    this.token = opts.token;
    this.fetchFn = opts.fetch ?? globalThis.fetch.bind(globalThis);
    this.reconnectDelayMs = opts.reconnectDelayMs ?? 250;
    this.maxReconnects = opts.maxReconnects ?? 10;
  }

  /** Bearer token when given; always the CSRF header (a signed-in browser needs it to change anything; harmless otherwise). */
  protected authHeaders(): Record<string, string> {
    return { ...(this.token ? { authorization: `Bearer ${this.token}` } : {}), 'x-flotilla-csrf': '1' };
  }

  protected async request<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, schema: z.ZodType<T>, body?: unknown): Promise<T>;
  protected async request(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, schema: null, body?: unknown): Promise<void>;
  protected async request<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, schema: z.ZodType<T> | null, body?: unknown): Promise<T | void> {
    const what = `${method} ${path}`;
    const headers: Record<string, string> = { ...this.authHeaders(), accept: 'application/json' };
    const init: RequestInit = { method, headers };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res: Response;
    try {
      res = await this.fetchFn(this.url + path, init);
    } catch (err) {
      throw new ApiError(0, 'network', `cannot reach the Flotilla server at ${this.url}: ${causeOf(err)}`);
    }
    if (!res.ok) throw await apiErrorFromResponse(res, what, this.url);
    if (schema === null) {
      await res.body?.cancel().catch(() => undefined);
      return;
    }
    let json: unknown;
    try {
      json = await res.json();
    } catch {
      throw new ApiError(res.status, 'bad_response', `${what}: ${this.url} answered ${res.status} with ${contentTypeOf(res)}, not JSON: is it the Flotilla control plane?`);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      // One line: a server that answers any request with some JSON (another service on that port)
      // listed every field of the reply it lacked, ~2 KB (fresh-tester finding).
      const issues = parsed.error.issues;
      const first = describeIssues(issues.slice(0, 1));
      const more = issues.length > 1 ? `, and ${issues.length - 1} more` : '';
      throw new ApiError(res.status, 'bad_response', `${what}: ${this.url} answered ${res.status} with JSON that is not the reply Flotilla sends (${first}${more}): is it the Flotilla control plane?`);
    }
    return parsed.data;
  }
}

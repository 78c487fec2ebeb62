import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../core/log.js';
import { authenticateJob, type JobAuth, type JobAuthStore } from './job-auth.js';
import { LogThrottle } from './log-throttle.js';
import { headerOf, type GatewayRequest } from './reply.js';

/**
 * A {@link GatewayRequest} whose job token was already looked up before its body was read
 * (node-adapter.ts, {@link CallAuth.preflight}): the route handlers use `auth` instead of
 * looking the token up a second time. Absent (or undefined) on other paths (web-adapter.ts).
 */
export interface PreAuthedRequest extends GatewayRequest {
  auth?: JobAuth | undefined;
}

/** The credentials a call sent: `x-api-key` (trimmed) and the `Authorization: Bearer` token, each '' when absent. */
function credentialsOf(h: IncomingHttpHeaders): { key: string; bearer: string } {
  return { key: headerOf(h, 'x-api-key')?.trim() ?? '', bearer: /^Bearer\s+(\S+)\s*$/i.exec(headerOf(h, 'authorization') ?? '')?.[1] ?? '' };
}

/**
 * The job token of an Anthropic-format call: `x-api-key`, else `Authorization: Bearer <token>`;
 * null when neither, or when both are sent and differ (which job's call it is would be a guess:
 * a fresh tester's call with two jobs' tokens was charged to one of them; {@link missingTokenMessage}).
 */
export function messagesTokenOf(h: IncomingHttpHeaders): string | null {
  const { key, bearer } = credentialsOf(h);
  if (key && bearer && key !== bearer) return null;
  return key || bearer || null;
}

/** The job token of an OpenAI-format call: `Authorization: Bearer <token>`, else `x-api-key`; null when neither, or both differ ({@link messagesTokenOf}). */
export function openaiTokenOf(h: IncomingHttpHeaders): string | null {
  const { key, bearer } = credentialsOf(h);
  if (key && bearer && key !== bearer) return null;
  return bearer || key || null;
}

/**
 * The 401 message of a call without a job token (or with two different ones: named as such,
 * neither echoed), the same on every route: both headers it may
 * come in (the format's own first), and what was wrong with an `Authorization` header that was
 * sent — its scheme named (a word of letters, never the credential), or an empty Bearer. The
 * OpenAI routes said "send it as Authorization: Bearer" though they take x-api-key too, and
 * called a Basic credential missing (fresh tester).
 */
export function missingTokenMessage(h: IncomingHttpHeaders, format: 'anthropic' | 'openai'): string {
  const where = format === 'anthropic' ? 'x-api-key or Authorization: Bearer' : 'Authorization: Bearer or x-api-key';
  const { key, bearer } = credentialsOf(h);
  if (key && bearer && key !== bearer) return `two different credentials: x-api-key and Authorization: Bearer carry different tokens; send the job token as ${where}, or the same token in both`;
  const sent = headerOf(h, 'authorization')?.trim() ?? '';
  // a scheme is a word before a credential: a lone word may be the credential itself, never said
  const scheme = /^([A-Za-z][A-Za-z-]{0,19})\s+\S/.exec(sent)?.[1];
  let why = '';
  if (/^bearer$/i.test(sent)) why = '; the Authorization header has an empty Bearer credential';
  else if (scheme) why = `; the Authorization header uses the ${scheme} scheme, not Bearer`;
  else if (sent) why = '; the Authorization header is not "Bearer <token>"';
  return `missing job token: send it as ${where}${why}`;
}

/** The model routes (POST only) and the token rule of each; every other request needs no body. */
const ROUTE_TOKEN: Record<string, (h: IncomingHttpHeaders) => string | null> = {
  '/v1/messages': messagesTokenOf,
  '/v1/messages/count_tokens': messagesTokenOf,
  '/v1/chat/completions': openaiTokenOf,
  '/v1/responses': openaiTokenOf,
};

const MISSING: JobAuth = Object.freeze({ missing: true as const });

/**
 * Job-token authentication shared by the node adapter and the route handlers, so the token of a
 * call is looked up once, before its body is read (issue: unauthenticated 31 MB bodies were
 * buffered before the 401), and rejections are logged at most once per 10 s per kind.
 */
export class CallAuth {
  private readonly throttle: LogThrottle;

  constructor(
    private readonly store: JobAuthStore,
    throttle?: LogThrottle,
  ) {
    this.throttle = throttle ?? new LogThrottle();
  }

  /**
   * Before the body of a request is read: the job auth of a model call (`POST` to one of the
   * four model routes), looked up by the route's token rule (a request without a token answers
   * at once, without the store), or null for any other request (the gateway answers it 404
   * without reading its body).
   */
  preflight(method: string | undefined, path: string, headers: IncomingHttpHeaders): JobAuth | Promise<JobAuth> | null {
    const tokenOf = method === 'POST' ? ROUTE_TOKEN[path] : undefined;
    if (!tokenOf) return null;
    const token = tokenOf(headers);
    return token ? authenticateJob(this.store, token) : MISSING;
  }

  /** The job auth of `req`: the one {@link preflight} found (node adapter), else looked up now by `tokenOf`. */
  of(req: GatewayRequest, tokenOf: (h: IncomingHttpHeaders) => string | null): JobAuth | Promise<JobAuth> {
    return (req as PreAuthedRequest).auth ?? authenticateJob(this.store, tokenOf(req.headers));
  }

  /**
   * Logs a rejected job token (`auth`: missing or unknown) — at most one line per 10 s per kind,
   * with how many were suppressed since the last one. Never the token itself.
   */
  logRejected(log: Logger, auth: JobAuth, path: string): void {
    if ('missing' in auth) this.throttle.warn(log, 'missing', 'gateway: rejected a call without a job token', { path });
    else if ('unknown' in auth) this.throttle.warn(log, 'unknown', 'gateway: rejected an unknown or expired job token', { path });
  }
}

import { BASE_URL_SETTING } from './upstream-redirect.js';
import { recordUnreachable, type CallContext } from './meter.js';
import type { CallSignal } from './reply.js';
import { cutReason } from './live-calls.js';
import { ReplyBrokenError, ReplyTooLargeError, UpstreamDroppedError, UpstreamRequestRefusedError, UpstreamTimeoutError } from './upstream-http.js';
import { BROKEN_STATUS, brokenMessage, recordBroken } from './upstream-broken.js';
import { recordTooLarge, tooLargeMessage } from './upstream-too-large.js';
import { recordTimedOut, TIMEOUT_STATUS, timeoutMessage } from './upstream-timeout.js';

/**
 * What the client is told when an upstream call threw after the gateway's retries (retry.ts):
 * the HTTP status and the message; the route shapes them in its wire format (Anthropic
 * `api_error`, OpenAI `server_error`), with `x-should-retry: false` — the gateway's retries are
 * used up, and a harness must not add its own — unless `retry` (a call cut by a stopping
 * server: another replica, or this one started again, may serve it).
 */
export interface UpstreamFailure {
  status: number;
  message: string;
  retry?: boolean;
  /** With `retry`: the `retry-after` to send, seconds. */
  retryAfterS?: number;
}

/**
 * Records the call whose upstream request threw `err` and says what the client gets. One table
 * for every route (`/v1/messages`, `/v1/chat/completions`, `/v1/responses`):
 * - {@link ReplyTooLargeError}: a 2xx over the whole-reply limit, billed by the provider →
 *   502, charged at the worst case (upstream-too-large.ts);
 * - {@link UpstreamTimeoutError} while the client is still there: the upstream may have worked
 *   on it → 504, charged an estimate (upstream-timeout.ts);
 * - {@link ReplyBrokenError}: a 2xx whose body broke or did not decode → 502, charged an
 *   estimate (upstream-broken.ts);
 * - {@link UpstreamRequestRefusedError}: the gateway's HTTP client would not send the request
 *   (nothing reached the provider) → 500 naming the reason, logged as an error, recorded with no
 *   tokens;
 * - the gateway cut the call (`signal` aborted by live-calls.ts, {@link cutReason}): the server
 *   is stopping → 503, retryable; its job's attempt ended → 502 saying so; recorded as an
 *   estimate when the request was sent (meter.ts recordUnreachable), with no tokens when it was
 *   cut before its last byte was written (the AbortError's `notSent`);
 * - {@link UpstreamDroppedError}: the connection ended after the whole request was sent, before
 *   a reply (the provider may have worked on it) → 502 saying so, charged an estimate;
 * - anything else (connection refused, reset before the request was sent; or the client went
 *   away, `signal` aborted) → 502 "could not be reached", recorded with no tokens, or as an
 *   estimate when the client went away after the request was sent whole (meter.ts
 *   recordUnreachable; a client gone before that is not charged: fresh-user finding).
 * Each is recorded exactly once and settles the call's reservation.
 */
export async function recordUpstreamFailure(ctx: CallContext, err: unknown, signal: CallSignal): Promise<UpstreamFailure> {
  if (err instanceof ReplyTooLargeError) {
    await recordTooLarge(ctx, err);
    return { status: 502, message: tooLargeMessage(err) };
  }
  if (err instanceof UpstreamTimeoutError && !signal.aborted) {
    await recordTimedOut(ctx, err);
    return { status: TIMEOUT_STATUS, message: timeoutMessage(err) };
  }
  if (err instanceof ReplyBrokenError) {
    await recordBroken(ctx, err);
    return { status: BROKEN_STATUS, message: brokenMessage(err) };
  }
  if (err instanceof UpstreamRequestRefusedError) {
    ctx.log.error('gateway: could not send the request upstream', { job: ctx.job.id, error: err.reason });
    await recordUnreachable(ctx, false);
    return { status: 500, message: `the gateway could not send this request to the model provider (${err.reason}); nothing was sent` };
  }
  if (err instanceof UpstreamDroppedError && !signal.aborted) {
    ctx.log.warn('gateway: the upstream closed the connection after the request was sent', { job: ctx.job.id, error: err.reason });
    await recordUnreachable(ctx, true);
    return { status: 502, message: droppedMessage(err, 'the call was charged an estimate') };
  }
  const gone = signal.aborted;
  // its signal aborted: the client went away, or the gateway cut it (live-calls.ts); before the
  // request was written whole (upstream-http.ts notSent), the provider had nothing to work on
  const sent = gone && (err as { notSent?: unknown } | null)?.notSent !== true;
  const cut = gone ? cutReason(signal) : undefined;
  if (cut === 'shutting_down') ctx.log.info('gateway: the call was cut before its reply: the server is stopping', { job: ctx.job.id });
  else if (cut === 'job_ended') ctx.log.info("gateway: the call was cut before its reply: its job's attempt ended", { job: ctx.job.id });
  else if (gone) ctx.log.info('gateway: the client went away before the reply', { job: ctx.job.id });
  else ctx.log.warn('gateway: upstream unreachable', { job: ctx.job.id, error: (err as Error).message });
  await recordUnreachable(ctx, sent);
  if (cut === 'shutting_down') return { status: 503, message: 'the Flotilla server is stopping: this call was cut before its reply and charged an estimate of what the provider may bill; try again', retry: true, retryAfterS: 5 };
  if (cut === 'job_ended') return { status: 502, message: "this call was cut before its reply: its job's attempt ended (cancelled, lost, finished or retried), and its token no longer authenticates" };
  const charged = ctx.unansweredAttempt === true ? '; an earlier attempt closed after the request was sent, before a reply, so the call was charged an estimate' : '';
  return { status: 502, message: unreachableMessage(ctx.provider, err, gone) + charged };
}

/**
 * The 502 text of an upstream the gateway could not reach: the provider, the connection's
 * error (`connect ECONNREFUSED 127.0.0.1:8080`: host and port only, the base URL holds no
 * credentials, config.ts refuses them) and the setting an admin should check (fresh-tester
 * finding: "could not be reached" alone, the cause only in the server log). `clientGone`: the
 * call ended because its client went away, which names no setting.
 */
export function unreachableMessage(provider: string, err: unknown, clientGone = false): string {
  if (clientGone) return `the model provider (${provider}) call ended before its reply: the client went away`;
  const cause = err instanceof Error && err.message ? `: ${err.message}` : '';
  const setting = BASE_URL_SETTING[provider];
  return `the model provider (${provider}) could not be reached${cause}${setting ? `; an admin should check ${setting} in the server's environment` : ''}`;
}

/**
 * The 502 text of a `count_tokens` call whose upstream request threw `err` after the retries: a
 * token count is never billed, so each error of {@link recordUpstreamFailure}'s table is named as
 * there, without its charge: a reply over the size limit, a stalled or silent upstream, a reply
 * that broke, a connection closed after the request was sent, a request the gateway would not
 * send; else {@link unreachableMessage} (fresh-tester finding: every one of them was "could not be
 * reached", sending an admin to check a base URL that worked).
 */
export function countFailureMessage(provider: string, err: unknown, clientGone: boolean): string {
  const free = 'a token count is not billed';
  if (err instanceof ReplyTooLargeError) return tooLargeMessage(err, ` (${free})`);
  if (err instanceof UpstreamTimeoutError && !clientGone) return `${timeoutMessage(err)} (${free})`;
  if (err instanceof ReplyBrokenError) return brokenMessage(err, free);
  if (err instanceof UpstreamRequestRefusedError) return `the gateway could not send this request to the model provider (${err.reason}); nothing was sent`;
  if (err instanceof UpstreamDroppedError && !clientGone) return droppedMessage(err, free, provider);
  return unreachableMessage(provider, err, clientGone);
}

/** The 502 text of a connection the upstream closed after the whole request was sent, before a reply: the provider when given, the socket's error, then `outcome` (what it was charged). */
function droppedMessage(err: UpstreamDroppedError, outcome: string, provider?: string): string {
  return `the model provider${provider ? ` (${provider})` : ''} closed the connection after the request was sent, before replying (${err.reason}); ${outcome}`;
}

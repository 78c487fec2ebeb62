import { recordUnreachable, type CallContext } from './meter.js';
import type { CallSignal } from './reply.js';
import { ReplyBrokenError, ReplyTooLargeError, UpstreamRequestRefusedError, UpstreamTimeoutError } from './upstream-http.js';
import { BROKEN_STATUS, brokenMessage, recordBroken } from './upstream-broken.js';
import { recordTooLarge, tooLargeMessage } from './upstream-too-large.js';
import { recordTimedOut, TIMEOUT_STATUS, timeoutMessage } from './upstream-timeout.js';

/**
 * What the client is told when an upstream call threw after the gateway's retries (retry.ts):
 * the HTTP status and the message; the route shapes them in its wire format (Anthropic
 * `api_error`, OpenAI `server_error`), always with `x-should-retry: false` — the gateway's
 * retries are used up, and a harness must not add its own.
 */
export interface UpstreamFailure {
  status: number;
  message: string;
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
 * - anything else (connection refused, reset before a reply; or the client went away, `signal`
 *   aborted) → 502 "could not be reached", recorded with no tokens, or as an estimate when the
 *   client went away after the request was sent (meter.ts recordUnreachable).
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
  const gone = signal.aborted;
  // its signal aborted: the client went away, or the gateway cut it (its job ended, the server is stopping: live-calls.ts)
  if (gone) ctx.log.info('gateway: the call ended before the reply (the client went away, or its job ended or the server stopped)', { job: ctx.job.id });
  else ctx.log.warn('gateway: upstream unreachable', { job: ctx.job.id, error: (err as Error).message });
  await recordUnreachable(ctx, gone);
  return { status: 502, message: 'the model provider could not be reached' };
}

import { DEFAULT_MAX_OUTPUT_TOKENS } from './budget.js';
import { recordEstimated, recordUnreachable, type CallContext } from './meter.js';
import { estimateUsage } from './usage.js';
import type { UpstreamTimeoutError } from './upstream-http.js';

/**
 * An upstream that timed out before its reply was read whole (upstream-http.ts
 * {@link UpstreamTimeoutError}: no headers within 10 minutes, or a whole body silent for 5).
 * The upstream had the request and may have worked on it and billed it, so the call is not
 * retried (retry.ts `noRetry`) and never recorded at $0: it is charged an estimate, marked as
 * one, as a stream that broke is (meter.ts, usage.ts estimateUsage) — input by the request's
 * size, output by the reply bytes received (none for a headers timeout: at least 1 token) up to
 * the request's output limit — settled against the call's reservation. A non-2xx body that
 * stalled is an error reply (not billed): recorded with no tokens, as meter.ts does for errors.
 * A stream cut by the body timeout needs nothing here: the meter charges it as a broken stream.
 * The client gets a 504 naming the wait (the caller shapes it, `x-should-retry: false`).
 */

/** HTTP status the client gets for a timed-out upstream call. */
export const TIMEOUT_STATUS = 504;

/** The message of the 504 the client gets. */
export function timeoutMessage(err: UpstreamTimeoutError): string {
  const mins = err.ms >= 60_000 ? `${Math.round(err.ms / 60_000)} min` : `${err.ms} ms`;
  return err.phase === 'headers'
    ? `the model provider sent no reply within ${mins}; the call was given up`
    : `the model provider's reply stalled (no data for ${mins}); the call was given up`;
}

/** Records the timed-out call (see the module comment). */
export async function recordTimedOut(ctx: CallContext, err: UpstreamTimeoutError): Promise<void> {
  ctx.log.warn('gateway: upstream timed out', { job: ctx.job.id, phase: err.phase, ms: err.ms, status: err.status });
  if (err.phase === 'body' && (err.status < 200 || err.status >= 300)) return recordUnreachable(ctx);
  const usage = estimateUsage(null, ctx.requestBytes, err.bytes, ctx.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS);
  await recordEstimated(ctx, TIMEOUT_STATUS, usage);
}

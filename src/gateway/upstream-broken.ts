import { recordEstimated, type CallContext } from './meter.js';
import { estimateUsage } from './usage.js';
import { DEFAULT_MAX_OUTPUT_TOKENS } from './worst-case.js';
import type { ReplyBrokenError } from './upstream-http.js';

/**
 * A 2xx reply whose whole body broke after its headers, or a reply whose head could not be read
 * (upstream-http.ts {@link ReplyBrokenError}: the connection reset mid-body, a content-encoding
 * that does not decode; a malformed or oversized head, status 0). The provider served the call and bills it, so it is not retried and never recorded
 * at $0: it is charged an estimate, marked as one, as a stream that broke is (meter.ts,
 * usage.ts estimateUsage) — input by the request's size, output by the body bytes received
 * (at least 1 token) up to the output limit reserved for — settled against the call's
 * reservation. The client gets a 502 naming what broke (the caller shapes it in its wire
 * format, with `x-should-retry: false`).
 */

/** HTTP status the client gets for a broken reply. */
export const BROKEN_STATUS = 502;

/** The message of the 502 the client gets; `outcome` what became of the call (count_tokens: not billed). */
export function brokenMessage(err: ReplyBrokenError, outcome = 'the call was charged an estimate and not retried'): string {
  return `the model provider's reply${err.status ? ` (HTTP ${err.status})` : ''} could not be read: ${err.reason}; ${outcome}`;
}

/** Records the call of a broken reply (see the module comment). */
export async function recordBroken(ctx: CallContext, err: ReplyBrokenError): Promise<void> {
  ctx.log.warn('gateway: upstream reply broke', { job: ctx.job.id, status: err.status, bytes: err.bytes, reason: err.reason });
  const usage = estimateUsage(null, ctx.requestBytes, err.bytes, ctx.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS);
  await recordEstimated(ctx, BROKEN_STATUS, usage);
}

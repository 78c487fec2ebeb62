import { DEFAULT_MAX_OUTPUT_TOKENS } from './budget.js';
import { recordEstimated, recordUnreachable, type CallContext } from './meter.js';
import { estimateUsage } from './usage.js';
import type { ReplyTooLargeError } from './upstream-http.js';

/**
 * A whole upstream reply over the size limit (upstream-http.ts {@link ReplyTooLargeError}).
 * A 2xx one was produced and billed by the provider, so it is not retried (retry.ts) and its
 * charge is not lost: the call is recorded at the worst-case estimate, marked as one — input by
 * the request's size (bytes/4, usage.ts estimateUsage), output at the request's output limit
 * (max_tokens, else the default) since a reply that big used all of it — and settled against the
 * tree's reservation. The client gets a 502 naming the limit (the caller shapes it in its wire
 * format, with `x-should-retry: false`).
 */

/** The message of the 502 the client gets: names the limit in bytes, then `advice` (a model call's, by default; count_tokens says it is not billed). */
export function tooLargeMessage(err: ReplyTooLargeError, advice = '. Ask for a shorter reply (a lower max_tokens) or stream it'): string {
  return `the model provider's reply (HTTP ${err.status}) is over the gateway's ${err.limit}-byte limit for a whole reply; it was not passed on${advice}`;
}

/**
 * Records the call of a too-large reply: a 2xx as answered 502 at the worst-case estimate (see
 * the module comment), settling `ctx.reservation` in the same write (meter.ts); an error reply
 * (not billed) as meter.ts recordUnreachable does (no tokens, usage known).
 */
export async function recordTooLarge(ctx: CallContext, err: ReplyTooLargeError): Promise<void> {
  ctx.log.warn('gateway: upstream reply over the size limit', { job: ctx.job.id, status: err.status, limit: err.limit, charged: err.noRetry });
  if (!err.noRetry) return recordUnreachable(ctx);
  // every output token counted: the reply's bytes (> the limit) stand for far more than the limit
  const usage = estimateUsage(null, ctx.requestBytes, Number.MAX_SAFE_INTEGER, ctx.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS);
  await recordEstimated(ctx, 502, usage);
}

import { meteredReply, type CallContext } from './meter.js';
import type { StreamReader } from './openai-usage.js';
import type { CallSignal, Reply } from './reply.js';
import type { CallUsage, StreamUsageState } from './usage.js';

/** No tokens of any kind (a fresh object each time: the meter may build on it). */
const noTokens = (): CallUsage => ({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0 });

/** A stream that completed with no tokens. */
const noTokensState = (): StreamUsageState => ({ sawStart: true, complete: true, usageFinal: true, errored: false, invalidUsage: false, usage: noTokens(), textBytes: 0, model: null });

/** A {@link StreamReader} that reads nothing: whatever passes, the usage is none (a stream cut short is still estimated by the meter). */
const noTokensReader = (): StreamReader => ({ push: () => undefined, end: noTokensState, state: noTokensState });

/**
 * Makes `ctx` the context of a call the provider does not bill (`POST /v1/messages/count_tokens`:
 * Anthropic counts tokens for free; the scripted model estimates them itself) and returns it:
 * metered with meter.ts `meteredReply`, its reply — whatever it says, `input_tokens` included,
 * which is a count, not usage — is recorded with no tokens, usage known, $0, under the reply's
 * status (so the ledger holds every call a job made, and no figure of cost or tokens moves).
 */
export function unbilled(ctx: CallContext): CallContext {
  ctx.unbilled = true;
  ctx.usageFromBody = noTokens;
  ctx.streamReader = noTokensReader;
  return ctx;
}

/**
 * Meters `res`, the reply to an {@link unbilled} call: recorded once under its status with no
 * tokens, usage known, $0 — a 2xx without a body (a 204) too, which the meter charges an
 * estimate on a billed call. @returns the reply to send (as meter.ts `meteredReply`).
 */
export async function meterUnbilled(res: Reply, ctx: CallContext, signal?: CallSignal): Promise<Reply> {
  unbilled(ctx);
  if (res.body || res.stream) return meteredReply(res, ctx, signal);
  // metered as an empty body (no tokens), passed on as it came (no body invented)
  await meteredReply({ ...res, body: Buffer.alloc(0) }, ctx, signal);
  return res;
}

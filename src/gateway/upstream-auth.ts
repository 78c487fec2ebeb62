import { anthropicError, providerSetting } from './errors.js';
import { meteredReply, type CallContext } from './meter.js';
import { openaiError } from './openai-wire.js';
import { discardReply, type CallSignal, type Reply } from './reply.js';
import { KEY_REFUSED_SKIP_MS, type KeyRefusal } from './retry.js';

/**
 * An upstream 401 or 403 (after the gateway's retries, every key the call tried refused;
 * retry.ts fails over to the provider's other keys first): the model provider refused the
 * GATEWAY's own key (revoked, expired, without access), not the job's token — the gateway
 * already accepted that. Passed on as it came, a harness reads it as its own key being bad
 * (Claude Code: "invalid x-api-key") and blames the wrong party; so every route maps it here,
 * in one place, to the wire format's server error that harnesses do not retry.
 */
export function isUpstreamAuthRefusal(status: number): boolean {
  return status === 401 || status === 403;
}

/**
 * What the job is told when `provider` answered `status` (401/403) to the gateway's key: who
 * refused which key and that an admin must fix the server's setting. Never any key text (not even masked).
 */
export function upstreamAuthMessage(provider: string, status: number): string {
  return (
    `the model provider (${provider}) refused the gateway's key for this provider (HTTP ${status}): ` +
    `the server's key is revoked, expired or not allowed this model; an admin must fix ${providerSetting(provider)} in the server's environment and restart it. ` +
    `Not a problem with the job's own token, which the gateway accepted`
  );
}

/**
 * The `onKeyRefused` of retry.ts withRetries for a call: logs (warn) which key of the
 * provider's ring was refused — `key` its position (1-based) of `keys`, the upstream `status`,
 * the job, provider and model — and that the ring skips it for {@link KEY_REFUSED_SKIP_MS}.
 * Never any key text (not even masked, key-mask.ts): the position is what the admin matches
 * against the comma-separated setting.
 */
export function logKeyRefused(ctx: CallContext): (refusal: KeyRefusal) => void {
  return (r) =>
    ctx.log.warn(`gateway: the model provider refused one of the gateway's keys; it is skipped for ${KEY_REFUSED_SKIP_MS / 1000} s`, {
      job: ctx.job.id,
      provider: ctx.provider,
      model: ctx.requestModel,
      key: r.position,
      keys: r.keys,
      status: r.status,
      setting: providerSetting(ctx.provider),
    });
}

/**
 * Maps a provider's reply `res` to the gateway's answer when it is an upstream 401/403
 * ({@link isUpstreamAuthRefusal}); null for any other reply (the route meters it as usual).
 * For a 401/403: the call is recorded once with the upstream status and no tokens (meter.ts:
 * a non-2xx is not billed; usage known; its reservation settled at $0), an error is logged for
 * the admin (job, provider, model, status; no key, no upstream body), the upstream body is
 * dropped (it may echo the key), and the reply is the wire format's server error with
 * `x-should-retry: false` and {@link upstreamAuthMessage}: `anthropic` → 500 `api_error`,
 * `openai` → 500 `server_error` (code `upstream_auth_failed`).
 */
export async function upstreamAuthRefusal(res: Reply, ctx: CallContext, format: 'anthropic' | 'openai', signal?: CallSignal): Promise<Reply | null> {
  if (!isUpstreamAuthRefusal(res.status)) return null;
  await meteredReply(res, ctx, signal);
  await discardReply(res);
  ctx.log.error('gateway: the model provider refused the gateway\'s key: an admin must fix the key', { job: ctx.job.id, provider: ctx.provider, model: ctx.requestModel, status: res.status });
  const message = upstreamAuthMessage(ctx.provider, res.status);
  if (format === 'anthropic') return anthropicError(500, 'api_error', message, { retry: false });
  const reply = openaiError(500, 'server_error', message, 'upstream_auth_failed');
  reply.headers['x-should-retry'] = 'false';
  return reply;
}

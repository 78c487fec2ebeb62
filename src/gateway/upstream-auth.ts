import { anthropicError, providerSetting } from './errors.js';
import { meteredReply, type CallContext } from './meter.js';
import { openaiError } from './openai-wire.js';
import { discardReply, REPLY_OPS, type CallSignal, type Reply } from './reply.js';
import { KEY_REFUSED_SKIP_MS, type KeyRefusal } from './retry.js';

/**
 * Why the model provider refused the GATEWAY's own key, or null when `res` is no such refusal:
 * - `auth`: 401 or 403 — the key is revoked, expired or without access;
 * - `billing`: the account behind the key has no credit or quota left — Anthropic's 402
 *   `billing_error` (docs.anthropic.com/en/api/errors) and the 400 `invalid_request_error`
 *   "Your credit balance is too low to access the Anthropic API" it sends in practice (every
 *   route, count_tokens too: the reply users of Claude Code report, github.com/anthropics/
 *   claude-code issues #4208, #66314); OpenAI's 429 `insufficient_quota`
 *   (platform.openai.com/docs/guides/error-codes; its `error.code` or `error.type`, in a whole
 *   reply body; a 429 without it is a rate limit, retried as usual).
 * The gateway already accepted the job's token, so either is the server's problem, not the
 * job's. Passed on as they came, a harness reads a 401 as its own key being bad (Claude Code:
 * "invalid x-api-key") and a billing refusal as ITS budget being spent (the same 402 / 429
 * `insufficient_quota` the gateway's own budget refusal sends: fresh-user finding), and blames
 * the wrong party; so retry.ts fails over to the provider's other keys first (another key may be
 * another account) and every route then maps what is left here, in one place.
 */
export function gatewayKeyRefusal(res: Reply): 'auth' | 'billing' | null {
  if (res.status === 401 || res.status === 403) return 'auth';
  if (res.status === 402) return 'billing';
  if (res.status === 429 && res.body !== null && insufficientQuota(res.body)) return 'billing';
  if (res.status === 400 && res.body !== null && creditTooLow(res.body)) return 'billing';
  return null;
}

/** Largest error body read for a billing refusal, bytes (an error body is a few hundred). */
const QUOTA_BODY_MAX = 64 * 1024;

/** `body`'s `error` object when it is a JSON error body of at most {@link QUOTA_BODY_MAX} bytes holding `marker`; else null. */
function errorObject(body: Buffer, marker: string): { code?: unknown; type?: unknown; message?: unknown } | null {
  if (body.byteLength > QUOTA_BODY_MAX || !body.includes(marker)) return null;
  try {
    const e = (JSON.parse(body.toString('utf8')) as { error?: unknown } | null)?.error;
    return e !== null && typeof e === 'object' ? e : null;
  } catch {
    return null;
  }
}

/** True when `body` is OpenAI's error JSON with `error.code` or `error.type` `insufficient_quota`. */
function insufficientQuota(body: Buffer): boolean {
  const e = errorObject(body, 'insufficient_quota');
  return e?.code === 'insufficient_quota' || e?.type === 'insufficient_quota';
}

/** How Anthropic's message for an account without credit begins, in its 400 `invalid_request_error`. */
const CREDIT_TOO_LOW = 'Your credit balance is too low to access the Anthropic API';

/**
 * True when `body` is Anthropic's 400 `invalid_request_error` whose message begins with its
 * credit refusal. Only the beginning: a 400 that quotes the job's own text (`Unexpected value(s)
 * \`credit balance is too low\` for the anthropic-beta header`) must not let a job take the
 * server's keys out of service or raise a false "add credit" alarm (fresh-user finding).
 */
function creditTooLow(body: Buffer): boolean {
  const e = errorObject(body, CREDIT_TOO_LOW);
  return e?.type === 'invalid_request_error' && typeof e.message === 'string' && e.message.startsWith(CREDIT_TOO_LOW);
}

/**
 * What the job is told when `provider` refused the gateway's key (`why`, {@link gatewayKeyRefusal};
 * `status` the upstream's): who refused which key and that an admin must fix the server's
 * setting or the provider account. Never any key text (not even masked).
 */
export function upstreamAuthMessage(provider: string, status: number, why: 'auth' | 'billing' = 'auth'): string {
  if (why === 'billing') {
    return (
      `the model provider (${provider}) refused the gateway's key for billing (HTTP ${status}): the provider account behind the server's key has no credit or quota left; ` +
      `an admin must add credit to that account, or set a key of another account in ${providerSetting(provider)} in the server's environment and restart it. ` +
      `Not this job's budget, which had room for the call`
    );
  }
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
 * The options of retry.ts withRetries for one call of `ctx` to a provider: `signal`, the
 * gateway's replies ({@link REPLY_OPS}), a refused key ({@link gatewayKeyRefusal}: skipped by the
 * ring, the call failing over to another key) logged by {@link logKeyRefused}, and an attempt
 * the provider may have billed without replying noted on `ctx` (meter.ts `unansweredAttempt`).
 */
export function upstreamRetryOptions(ctx: CallContext, signal?: CallSignal) {
  return { signal, ops: REPLY_OPS, keyRefused: (r: Reply) => gatewayKeyRefusal(r) !== null, onKeyRefused: logKeyRefused(ctx), onMayBeBilled: () => void (ctx.unansweredAttempt = true) };
}

/**
 * Logs (info, `gateway: upstream retried`: job, upstream calls made, the status answered) a call
 * that withRetries answered after more than one upstream call, on every route (the OpenAI ones
 * said nothing: a fresh tester saw only the final status).
 */
export function logRetried(ctx: CallContext, out: { calls: number; response: Reply }): void {
  if (out.calls > 1) ctx.log.info('gateway: upstream retried', { job: ctx.job.id, calls: out.calls, status: out.response.status });
}

/**
 * Maps a provider's reply `res` to the gateway's answer when the provider refused the gateway's
 * key ({@link gatewayKeyRefusal}: 401/403, or a billing refusal); null for any other reply (the
 * route meters it as usual). For a refusal: the call is recorded once with the upstream status
 * and no tokens (meter.ts: a non-2xx is not billed; usage known; its reservation settled at $0),
 * an error is logged for the admin (job, provider, model, status, why; no key, no upstream
 * body), the upstream body is dropped (it may echo the key), and the reply is the wire format's
 * server error with `x-should-retry: false` and {@link upstreamAuthMessage}: `anthropic` → 500
 * `api_error`, `openai` → 500 `server_error` (code `upstream_auth_failed`, or
 * `upstream_billing_refused`). The job is not paused: no top-up of its budget would help.
 */
export async function upstreamAuthRefusal(res: Reply, ctx: CallContext, format: 'anthropic' | 'openai', signal?: CallSignal): Promise<Reply | null> {
  const why = gatewayKeyRefusal(res);
  if (why === null) return null;
  await meteredReply(res, ctx, signal);
  await discardReply(res);
  const what = why === 'billing' ? ' for billing (its account has no credit or quota left): an admin must add credit or change the key' : ': an admin must fix the key';
  ctx.log.error(`gateway: the model provider refused the gateway's key${what}`, { job: ctx.job.id, provider: ctx.provider, model: ctx.requestModel, status: res.status });
  const message = upstreamAuthMessage(ctx.provider, res.status, why);
  if (format === 'anthropic') return anthropicError(500, 'api_error', message, { retry: false });
  const reply = openaiError(500, 'server_error', message, why === 'billing' ? 'upstream_billing_refused' : 'upstream_auth_failed');
  reply.headers['x-should-retry'] = 'false';
  return reply;
}

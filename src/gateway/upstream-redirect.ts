import { anthropicError } from './errors.js';
import { meteredReply, type CallContext } from './meter.js';
import { openaiError } from './openai-wire.js';
import { discardReply, headerOf, type CallSignal, type Reply } from './reply.js';
import { upstreamAuthRefusal } from './upstream-auth.js';
import { upstreamNotJsonReply } from './upstream-not-json.js';

/** The setting that gives each provider's base URL (what a redirecting or unreachable upstream most likely means is wrong). */
export const BASE_URL_SETTING: Record<string, string> = {
  anthropic: 'ANTHROPIC_BASE_URL',
  openai: 'OPENAI_BASE_URL',
  'openai-compatible': 'FLOTILLA_OPENAI_COMPATIBLE_URL',
};

/**
 * Maps a provider's 3xx reply `res` to the gateway's answer; null for any other reply (the route
 * meters it as usual). The gateway's HTTP client follows no redirect (it would carry the
 * server's key to another host), and a 3xx passed on as it came is worse: a client that follows
 * it (Node's fetch does, for a 307 of a POST) sends the job's token and the whole prompt to the
 * `Location` (fresh-user finding). So the call is recorded once with the upstream status and no
 * tokens (the provider served nothing: $0, usage known, meter.ts), the upstream body dropped,
 * a warning logged for the admin (job, provider, status, the Location's origin), and the reply is
 * the wire format's 502 with `x-should-retry: false`, naming the status, the origin and the
 * base-URL setting to check: `anthropic` → `api_error`, `openai` → `server_error` (code
 * `upstream_redirect`). Never a path or query of the Location (they may carry a token).
 */
export async function upstreamRedirectRefusal(res: Reply, ctx: CallContext, format: 'anthropic' | 'openai', signal?: CallSignal): Promise<Reply | null> {
  if (res.status < 300 || res.status >= 400) return null;
  await meteredReply(res, ctx, signal);
  await discardReply(res);
  const origin = originOf(headerOf(res.headers, 'location'));
  ctx.log.warn('gateway: the model provider answered with a redirect, not followed', { job: ctx.job.id, provider: ctx.provider, status: res.status, to: origin ?? 'unknown' });
  const setting = BASE_URL_SETTING[ctx.provider];
  const message =
    `the model provider (${ctx.provider}) answered HTTP ${res.status} with a redirect${origin ? ` to ${origin}` : ''}; the gateway follows no redirect ` +
    `(it would send the server's key elsewhere)${setting ? `: an admin should check ${setting} in the server's environment` : ''}`;
  if (format === 'anthropic') return anthropicError(502, 'api_error', message, { retry: false });
  const reply = openaiError(502, 'server_error', message, 'upstream_redirect');
  reply.headers['x-should-retry'] = 'false';
  return reply;
}

/**
 * The gateway's answer to a provider reply it does not pass on — its own key refused (401/403,
 * upstream-auth.ts), a redirect ({@link upstreamRedirectRefusal}) or an error whose body is not
 * JSON (upstream-not-json.ts) — recorded once; null for
 * any other reply (the route meters it as usual). What every route checks after the upstream call.
 */
export async function unpassedReply(res: Reply, ctx: CallContext, format: 'anthropic' | 'openai', signal?: CallSignal): Promise<Reply | null> {
  return (await upstreamAuthRefusal(res, ctx, format, signal)) ?? (await upstreamRedirectRefusal(res, ctx, format, signal)) ?? (await upstreamNotJsonReply(res, ctx, format, signal));
}

/** The origin (`scheme://host:port`) of a Location value, or null when it has none (relative, or not a URL). */
function originOf(location: string | undefined): string | null {
  if (!location) return null;
  try {
    const u = new URL(location);
    return u.origin === 'null' ? null : u.origin;
  } catch {
    return null;
  }
}

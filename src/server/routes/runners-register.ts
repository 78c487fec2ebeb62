import type { Hono } from 'hono';
import { RegisterRunnerRequest, type RegisterRunnerResponse } from '../../protocol/index.js';
import { hashToken, newToken } from '../../core/tokens.js';
import { bindLabels } from '../../core/runner-labels.js';
import { renamedWarning } from '../../core/runner-names.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, readBody } from '../http-util.js';

/**
 * `POST /api/runners/register` (no API token; body {@link RegisterRunnerRequest}) → 201
 * `{ runnerId, credential: "flc_..." }`. Consumes the registration token (single use); the
 * runner's labels = its own plus the token's, the token's binding (its own may only add keys
 * the token did not set; stored as `boundLabels` and re-applied at every hello). With the server's
 * `newRunnerHoldMs` set, the new runner starts held (status `provisioning`) that long.
 * Names are unique among runners that are not revoked (core/runner-names.ts): a name another
 * such runner has is registered as the first free `NAME-2`, `NAME-3`, ...; the response's
 * `name` is the name it got, and `warning` says why it is not the one asked for.
 * Unknown, used, expired or revoked token → 401 `unauthorized`, one message for all four (it
 * never shows the token).
 */
export function mountRegisterRunner(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/runners/register', async (c) => {
    const body = await readBody(c, RegisterRunnerRequest);
    if (!body.ok) return body.response;
    const req = body.value;
    const now = ctx.now();
    const reg = await ctx.store.consumeRegistrationToken(hashToken(req.token), now);
    if (!reg) return apiError(c, 401, 'unauthorized', 'registration token is unknown, already used, expired or revoked', 'token');
    const credential = newToken('flc');
    const runner = await ctx.store.registerRunner({
      name: req.name,
      labels: bindLabels(reg.labels, req.labels).labels,
      boundLabels: reg.labels,
      capacity: req.capacity,
      credentialHash: hashToken(credential),
      now,
      ...(ctx.newRunnerHoldMs ? { hold: { until: now + ctx.newRunnerHoldMs, reason: 'new runner: finishing its setup', kind: 'provisioning' as const } } : {}),
    });
    const warning = runner.name !== req.name ? renamedWarning(req.name, runner.name) : undefined;
    if (warning) ctx.log.warn('runner registered under another name', { runnerId: runner.id, asked: req.name, name: runner.name });
    else ctx.log.info('runner registered', { runnerId: runner.id, name: runner.name });
    const res: RegisterRunnerResponse = { runnerId: runner.id, credential, name: runner.name, ...(warning ? { warning } : {}) };
    return c.json(res, 201);
  });
}

import type { Hono } from 'hono';
import { CreateRunnerTokenRequest } from '../../protocol/index.js';
import { createRegistrationToken, requireAdmin, type AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { readBody } from '../http-util.js';
import { iso } from '../views.js';

/**
 * `POST /api/runner-tokens` (admin; body {@link CreateRunnerTokenRequest}) → 201
 * `{ token: "flr_...", expiresAt: ISO }`: a single-use registration token for a new runner.
 */
export function mountCreateRunnerToken(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/runner-tokens', requireAdmin(), async (c) => {
    const body = await readBody(c, CreateRunnerTokenRequest);
    if (!body.ok) return body.response;
    const now = ctx.now();
    const ttlMs = body.value.expiresInSeconds * 1000;
    const token = await createRegistrationToken(ctx.store, body.value.labels, ttlMs, now);
    return c.json({ token, expiresAt: iso(now + ttlMs) }, 201);
  });
}

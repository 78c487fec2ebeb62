import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { requireApiToken, type AppEnv } from './auth.js';
import { ApiTokenCache } from './api-token-cache.js';
import type { ServerContext } from './context.js';
import { apiError, idError, parseId } from './http-util.js';
import { mountCreateJob } from './routes/jobs-create.js';
import { mountListJobs } from './routes/jobs-list.js';
import { mountGetJob } from './routes/jobs-get.js';
import { mountCancelJob } from './routes/jobs-cancel.js';
import { mountJobBudget } from './routes/jobs-budget.js';
import { mountCosts } from './routes/costs.js';
import { mountJobEvents } from './routes/jobs-events.js';
import { mountListRunners } from './routes/runners-list.js';
import { mountGetRunner } from './routes/runners-get.js';
import { mountRunnerHolds } from './routes/runners-hold.js';
import { mountRunnerCapacity } from './routes/runners-capacity.js';
import { mountRevokeRunner } from './routes/runners-revoke.js';
import { mountUpdateRunner } from './routes/runners-update.js';
import { mountStartJob } from './routes/jobs-start.js';
import { mountCreateRunnerToken, mountRunnerTokens } from './routes/runner-tokens.js';
import { mountRegisterRunner } from './routes/runners-register.js';
import { mountListAgents } from './routes/agents-list.js';
import { mountAgentsInstall } from './routes/agents-install.js';
import { mountEffortTiers } from './routes/effort-tiers.js';
import { mountEffortDefault } from './routes/effort-default.js';
import { mountRunnerActivity } from './routes/runners-activity.js';
import { mountJobEventPage } from './routes/jobs-event-page.js';
import { mountTaskConversation } from './tasks/conversation.js';
import { mountHealth } from './routes/health.js';
import { mountOpenApi } from './routes/openapi.js';
import { mountSession } from './routes/session.js';
import { mountUsers } from './routes/users.js';
import { mountApiTokens } from './routes/api-tokens.js';
import { mountTasks } from './tasks/routes.js';
import { SignInThrottle } from './sign-in-throttle.js';
import { mountReceivers } from './hooks/receivers-api.js';
import { mountWeb } from './web.js';
import { jobTokenAuth } from './job-auth.js';
import { mountJobTree } from './routes/jobs-tree.js';
import { queryRule } from './query-rule.js';
import { readEmptyBody } from './routes/empty-body.js';

/** Largest request body the API reads, bytes (1 MiB): job inputs are small JSON documents. */
export const MAX_API_BODY_BYTES = 1024 * 1024;

/** The 413 of an API request body over {@link MAX_API_BODY_BYTES} (here, and in server.ts for one declared so by its content-length). */
export const API_BODY_TOO_LARGE = { error: { code: 'payload_too_large', message: `request body is larger than ${MAX_API_BODY_BYTES} bytes` } } as const;

/**
 * The control plane's HTTP app (without the gateway): API token check on /api/*, every
 * route, JSON 404 `not_found` and 500 `internal` (details only in the log).
 */
export function createApp(ctx: ServerContext): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // Before anything reads a body (also before the token check, so an unauthenticated caller
  // cannot make the server buffer a huge upload): 413 past MAX_API_BODY_BYTES.
  app.use(
    '/api/*',
    bodyLimit({
      maxSize: MAX_API_BODY_BYTES,
      onError: (c) => c.json(API_BODY_TOO_LARGE, 413),
    }),
  );
  // A NUL in a path or query value would reach PostgreSQL text, which cannot hold it (a 500).
  app.use('/api/*', async (c, next) => (/%00/.test(c.req.url) ? apiError(c, 400, 'invalid_request', 'the URL must not contain NUL (%00)') : next()));
  app.use('/api/*', jobTokenAuth(ctx));
  // Failed sign-ins, counted in this process (each replica its own). Unknown API tokens are not
  // throttled per address: runners, harnesses and the CLI share 127.0.0.1, and a few stale job
  // tokens would lock them all out; tokens are 256-bit random values, not guessable.
  const throttle = new SignInThrottle();
  // API tokens found by hash, kept 1 s (api-token-cache.ts); revoking one here forgets them at once.
  const apiTokens = new ApiTokenCache(ctx.store, ctx.now);
  app.use('/api/*', requireApiToken(ctx.store, ctx.now, apiTokens));
  // a query parameter a route does not declare (query-rule.ts takesQuery) is a 400, never ignored
  app.use('/api/*', queryRule());
  // a DELETE takes no fields: a body with some is a 400 naming one, as an action that takes none
  // (routes/empty-body.ts; fresh-user finding: `DELETE /api/tokens/2 {"keep":true}` revoked it)
  app.use('/api/*', async (c, next) => {
    if (c.req.method !== 'DELETE') return next();
    const body = await readEmptyBody(c);
    return body.ok ? next() : body.response;
  });
  mountHealth(app, ctx);
  mountOpenApi(app);
  mountCreateJob(app, ctx);
  mountListJobs(app, ctx);
  mountGetJob(app, ctx);
  mountCancelJob(app, ctx);
  mountJobBudget(app, ctx);
  mountJobTree(app, ctx);
  mountCosts(app, ctx);
  mountJobEvents(app, ctx);
  mountJobEventPage(app, ctx);
  mountListRunners(app, ctx);
  mountGetRunner(app, ctx);
  mountRunnerActivity(app, ctx);
  mountRunnerHolds(app, ctx);
  mountRunnerCapacity(app, ctx);
  mountRevokeRunner(app, ctx);
  mountUpdateRunner(app, ctx);
  mountStartJob(app, ctx);
  mountCreateRunnerToken(app, ctx);
  mountRunnerTokens(app, ctx);
  mountRegisterRunner(app, ctx);
  mountListAgents(app, ctx);
  mountAgentsInstall(app, ctx);
  mountEffortTiers(app, ctx);
  mountEffortDefault(app, ctx);
  mountSession(app, ctx, throttle);
  mountUsers(app, ctx);
  mountApiTokens(app, ctx, apiTokens);
  mountTasks(app, ctx);
  mountTaskConversation(app, ctx);
  mountReceivers(app, ctx);
  // Webhooks (POST /hooks/*) carry their own auth and are served on plain node:http, before this
  // app (server.ts, hooks/hooks-node.ts).
  // Last: the dashboard answers every other GET with its index.html.
  mountWeb(app);
  app.notFound((c) => {
    // `/api/runners/abc`: its routes take numeric ids only (beside register and connect), so a
    // bad id fell through to "no route"; `/api/jobs/abc` answers 400 naming it (fresh-tester finding)
    const runner = /^\/api\/runners\/([^/]+)(\/|$)/.exec(c.req.path);
    if (runner && !['register', 'connect'].includes(runner[1]!) && parseId(runner[1]!) === null) return idError(c, 'id', 'a runner id');
    return apiError(c, 404, 'not_found', `no route ${c.req.method} ${c.req.path}`);
  });
  app.onError((err, c) => {
    ctx.log.error('request failed', { method: c.req.method, path: c.req.path, err: String(err) });
    return apiError(c, 500, 'internal', 'internal error (see the server log)');
  });
  return app;
}

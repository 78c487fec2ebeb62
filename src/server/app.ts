import { Hono } from 'hono';
import { requireApiToken, type AppEnv } from './auth.js';
import type { ServerContext } from './context.js';
import { apiError } from './http-util.js';
import { mountCreateJob } from './routes/jobs-create.js';
import { mountListJobs } from './routes/jobs-list.js';
import { mountGetJob } from './routes/jobs-get.js';
import { mountCancelJob } from './routes/jobs-cancel.js';
import { mountJobEvents } from './routes/jobs-events.js';
import { mountListRunners } from './routes/runners-list.js';
import { mountCreateRunnerToken } from './routes/runner-tokens.js';
import { mountRegisterRunner } from './routes/runners-register.js';
import { mountListAgents } from './routes/agents-list.js';
import { mountHealth } from './routes/health.js';
import { mountOpenApi } from './routes/openapi.js';

/**
 * The control plane's HTTP app (without the gateway): API token check on /api/*, every
 * route, JSON 404 `not_found` and 500 `internal` (details only in the log).
 */
export function createApp(ctx: ServerContext): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use('/api/*', requireApiToken(ctx.store));
  mountHealth(app, ctx);
  mountOpenApi(app);
  mountCreateJob(app, ctx);
  mountListJobs(app, ctx);
  mountGetJob(app, ctx);
  mountCancelJob(app, ctx);
  mountJobEvents(app, ctx);
  mountListRunners(app, ctx);
  mountCreateRunnerToken(app, ctx);
  mountRegisterRunner(app, ctx);
  mountListAgents(app, ctx);
  app.notFound((c) => apiError(c, 404, 'not_found', `no route ${c.req.method} ${c.req.path}`));
  app.onError((err, c) => {
    ctx.log.error('request failed', { method: c.req.method, path: c.req.path, err: String(err) });
    return apiError(c, 500, 'internal', 'internal error (see the server log)');
  });
  return app;
}

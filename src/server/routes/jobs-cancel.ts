import { readEmptyBody } from './empty-body.js';
import type { Hono } from 'hono';
import { isTerminal } from '../../core/job-state.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, idError, parseId } from '../http-util.js';
import { jobView } from '../views.js';
import { cancelDescendants, moveToCancelled } from '../cancel-tree.js';

/**
 * `POST /api/jobs/:id/cancel` → the Job. Queued/paused: `cancelled` at once. Assigned/running:
 * `cancelling` at once (endReason `cancelled`; its job token stops working at this moment), a
 * `status` event, and `job.cancel` to its runner (if connected here; runners on other replicas
 * learn it from their next heartbeat); it reads `cancelled` when the runner reports its
 * process tree gone (issue 4). Cancelling again re-sends `job.cancel`. Every descendant that
 * has not ended is cancelled the same way (issue 6, cancel-tree.ts). Terminal → 409
 * `not_cancellable`; unknown → 404.
 */
export function mountCancelJob(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/jobs/:id/cancel', async (c) => {
    const id = parseId(c.req.param('id'));
    if (id === null) return idError(c, 'id', 'a job id');
    const body = await readEmptyBody(c);
    if (!body.ok) return body.response;
    // A few tries: the job may move (e.g. get assigned) between reading and the fenced update.
    for (let i = 0; i < 5; i++) {
      const job = await ctx.store.getJob(id);
      if (!job) return apiError(c, 404, 'not_found', `no job ${id}`);
      if (isTerminal(job.status)) return apiError(c, 409, 'not_cancellable', `job ${id} has already ended (${job.status})`);
      if (job.status === 'cancelling') {
        if (job.runnerId !== null) await ctx.hub.send(job.runnerId, { type: 'job.cancel', jobId: id, attempt: job.attempt, reason: 'cancelled by request' });
        await cancelDescendants(ctx, id);
        return c.json(jobView(job));
      }
      const moved = await moveToCancelled(ctx, job, 'cancelled by request', { active: 'cancel requested; stopping its processes', idle: 'cancelled by request' });
      if (!moved) continue;
      ctx.log.info('job cancelled', { jobId: id, from: job.status });
      await cancelDescendants(ctx, id);
      return c.json(jobView(moved));
    }
    return apiError(c, 409, 'conflict', `job ${id} kept changing; try again`);
  });
}

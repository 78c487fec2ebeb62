import type { Hono } from 'hono';
import { isTerminal } from '../../core/job-state.js';
import type { AppEnv } from '../auth.js';
import type { ServerContext } from '../context.js';
import { apiError, parsePositiveInt } from '../http-util.js';
import { recordStatus } from '../status-events.js';
import { jobView } from '../views.js';

/**
 * `POST /api/jobs/:id/cancel` → the cancelled Job. Queued/paused: cancelled. Assigned/running:
 * cancelled in the store at once (endReason `cancelled`, which kills its job token), a
 * `status` event, and `job.cancel` to its runner (if connected here; runners on other replicas
 * learn it from their next heartbeat). Terminal → 409 `not_cancellable`; unknown → 404.
 */
export function mountCancelJob(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/jobs/:id/cancel', async (c) => {
    const id = parsePositiveInt(c.req.param('id'));
    if (id === null) return apiError(c, 400, 'invalid_request', 'id: must be a positive integer', 'id');
    // A few tries: the job may move (e.g. get assigned) between reading and the fenced update.
    for (let i = 0; i < 5; i++) {
      const job = await ctx.store.getJob(id);
      if (!job) return apiError(c, 404, 'not_found', `no job ${id}`);
      if (isTerminal(job.status)) return apiError(c, 409, 'not_cancellable', `job ${id} is already ${job.status}`);
      const now = ctx.now();
      const active = job.status === 'assigned' || job.status === 'running';
      const moved = await ctx.store.transitionJob(id, active ? job.attempt : null, [job.status], 'cancelled', now, { endReason: 'cancelled' });
      if (!moved) continue;
      await recordStatus(ctx.store, ctx.bus, id, 'cancelled', 'cancelled by request', now, job.runnerId ?? undefined);
      if (active && job.runnerId !== null) {
        await ctx.hub.send(job.runnerId, { type: 'job.cancel', jobId: id, attempt: job.attempt, reason: 'cancelled by request' });
        ctx.dispatcher.kick();
      }
      ctx.log.info('job cancelled', { jobId: id, from: job.status });
      return c.json(jobView(moved));
    }
    return apiError(c, 409, 'conflict', `job ${id} kept changing; try again`);
  });
}

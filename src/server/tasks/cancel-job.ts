import { isTerminal } from '../../core/job-state.js';
import type { JobRow } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { recordStatus } from '../status-events.js';

/**
 * Cancels a job the way `POST /api/jobs/:id/cancel` does (queued/paused → cancelled;
 * assigned/running → cancelling and `job.cancel` to its runner). Returns the job after the
 * change, or null when it had already ended or does not exist. `why` goes into its status event.
 */
export async function cancelTaskJob(ctx: Pick<ServerContext, 'store' | 'bus' | 'hub' | 'dispatcher' | 'now'>, jobId: number, why: string): Promise<JobRow | null> {
  for (let i = 0; i < 5; i++) {
    const job = await ctx.store.getJob(jobId);
    if (!job || isTerminal(job.status)) return null;
    if (job.status === 'cancelling') return job;
    const now = ctx.now();
    const active = job.status === 'assigned' || job.status === 'running';
    const to = active ? 'cancelling' : 'cancelled';
    const moved = await ctx.store.transitionJob(jobId, active ? job.attempt : null, [job.status], to, now, { endReason: 'cancelled' });
    if (!moved) continue;
    await recordStatus(ctx.store, ctx.bus, jobId, to, why, now, job.runnerId ?? undefined);
    if (active && job.runnerId !== null) {
      await ctx.hub.send(job.runnerId, { type: 'job.cancel', jobId, attempt: job.attempt, reason: why });
      ctx.dispatcher.kick();
    }
    return moved;
  }
  return null;
}

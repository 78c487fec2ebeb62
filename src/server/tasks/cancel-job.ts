import { isTerminal } from '../../core/job-state.js';
import type { JobRow } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { moveToCancelled } from '../cancel-tree.js';

/**
 * Cancels a job the way `POST /api/jobs/:id/cancel` does (cancel-tree.ts moveToCancelled). Returns the job after the
 * change, or null when it had already ended or does not exist. `why` goes into its status event.
 */
export async function cancelTaskJob(ctx: Pick<ServerContext, 'store' | 'bus' | 'hub' | 'dispatcher' | 'now'>, jobId: number, why: string): Promise<JobRow | null> {
  for (let i = 0; i < 5; i++) {
    const job = await ctx.store.getJob(jobId);
    if (!job || isTerminal(job.status)) return null;
    if (job.status === 'cancelling') return job;
    const moved = await moveToCancelled(ctx, job, why, { active: why, idle: why });
    if (moved) return moved;
  }
  return null;
}

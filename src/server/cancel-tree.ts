import { isTerminal } from '../core/job-state.js';
import { descendantsOf } from '../core/job-tree.js';
import type { ServerContext } from './context.js';
import { recordStatus } from './status-events.js';

/**
 * Cancels one job the way `POST /api/jobs/:id/cancel` does (queued/paused → `cancelled` at
 * once; assigned/running → `cancelling`, token dead, `job.cancel` to its runner; cancelling →
 * `job.cancel` sent again), with `reason` in its status event. Ended jobs are left alone.
 * @returns true when the job was (or already was being) cancelled, false when it had ended or does not exist.
 */
export async function cancelOneJob(ctx: ServerContext, id: number, reason: string): Promise<boolean> {
  for (let i = 0; i < 5; i++) {
    const job = await ctx.store.getJob(id);
    if (!job || isTerminal(job.status)) return false;
    if (job.status === 'cancelling') {
      if (job.runnerId !== null) await ctx.hub.send(job.runnerId, { type: 'job.cancel', jobId: id, attempt: job.attempt, reason });
      return true;
    }
    const active = job.status === 'assigned' || job.status === 'running';
    const to = active ? 'cancelling' : 'cancelled';
    const now = ctx.now();
    const moved = await ctx.store.transitionJob(id, active ? job.attempt : null, [job.status], to, now, { endReason: 'cancelled' });
    if (!moved) continue;
    await recordStatus(ctx.store, ctx.bus, id, to, active ? `${reason}; stopping its processes` : reason, now, job.runnerId ?? undefined);
    if (active && job.runnerId !== null) await ctx.hub.send(job.runnerId, { type: 'job.cancel', jobId: id, attempt: job.attempt, reason });
    return true;
  }
  return false;
}

/**
 * Cancels every descendant of job `id` that has not ended (issue 6: cancelling a job cancels
 * its whole subtree, queued, paused and running children included), parents before children.
 * Their runners kill their process trees as for any cancel. Returns the ids it cancelled.
 */
export async function cancelDescendants(ctx: ServerContext, id: number): Promise<number[]> {
  const job = await ctx.store.getJob(id);
  if (!job) return [];
  const tree = await ctx.store.listTreeJobs(job.rootId);
  const done: number[] = [];
  for (const d of descendantsOf(tree, id)) {
    if (await cancelOneJob(ctx, d, `cancelled with its ancestor job ${id}`)) done.push(d);
  }
  if (done.length) {
    ctx.dispatcher.kick();
    ctx.log.info('job subtree cancelled', { jobId: id, descendants: done.join(',') });
  }
  return done;
}

import { isTerminal } from '../core/job-state.js';
import { descendantsOf } from '../core/job-tree.js';
import type { ServerContext } from './context.js';
import { recordStatus } from './status-events.js';
import type { JobRow } from '../store/types.js';
import { cancelledWhilePaused } from '../gateway/budget.js';

/**
 * One try at the cancel move of `job` (as just read, not ended, not `cancelling`): queued/paused
 * → `cancelled`, assigned/running → `cancelling` (endReason `cancelled`, fenced by its attempt),
 * its status event (`message.active` or `message.idle`), and for an active job `job.cancel`
 * (`reason`) to its runner and a dispatch pass (its slot frees when the runner reports). A job
 * paused for budget keeps why it paused in `error`, less the top-up advice (gateway/budget.ts
 * cancelledWhilePaused: no top-up resumes an ended job). The one move every cancel makes (the
 * API, a tree, a task's job).
 * @returns the job after the move, or null when it changed meanwhile (read it again and retry).
 */
export async function moveToCancelled(
  ctx: Pick<ServerContext, 'store' | 'bus' | 'hub' | 'dispatcher' | 'now'>,
  job: JobRow,
  reason: string,
  message: { active: string; idle: string },
): Promise<JobRow | null> {
  const active = job.status === 'assigned' || job.status === 'running';
  const to = active ? 'cancelling' : 'cancelled';
  const now = ctx.now();
  const error = job.status === 'paused' && job.endReason === 'budget' && job.error ? { error: cancelledWhilePaused(job.error) } : {};
  const moved = await ctx.store.transitionJob(job.id, active ? job.attempt : null, [job.status], to, now, { endReason: 'cancelled', ...error });
  if (!moved) return null;
  await recordStatus(ctx.store, ctx.bus, job.id, to, active ? message.active : message.idle, now, job.runnerId ?? undefined);
  if (active && job.runnerId !== null) {
    await ctx.hub.send(job.runnerId, { type: 'job.cancel', jobId: job.id, attempt: job.attempt, reason });
    ctx.dispatcher.kick();
  }
  return moved;
}

/**
 * Cancels one job the way `POST /api/jobs/:id/cancel` does ({@link moveToCancelled}; cancelling
 * → `job.cancel` sent again), with `reason` in its status event. Ended jobs are left alone.
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
    if (await moveToCancelled(ctx, job, reason, { active: `${reason}; stopping its processes`, idle: reason })) return true;
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

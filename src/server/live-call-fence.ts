import type { Logger } from '../core/log.js';
import type { JobRow, Store } from '../store/types.js';
import { ENDS_CALLS } from './live-call-aborts.js';

/** How often the jobs of the gateway's live calls are read back, ms: a job ended through another replica has its calls here cut within this (plus one read). */
export const LIVE_CALL_FENCE_MS = 1000;

/**
 * Whether attempt `attempt` of `job` may make no more model calls, read from the store: the job
 * is gone, a later attempt runs, its status ends calls (live-call-aborts.ts ENDS_CALLS: cancelling,
 * cancelled, lost, succeeded, failed, queued), or it is paused for budget and that attempt has
 * ended (`finishedAt` set: store.endPausedAttempt; until then a pause lets the calls in flight
 * finish, as in this process).
 */
export function attemptCallsEnded(job: Pick<JobRow, 'status' | 'attempt' | 'finishedAt'> | null, attempt: number): boolean {
  if (job === null || job.attempt > attempt) return true;
  if (ENDS_CALLS.has(job.status)) return true;
  return job.status === 'paused' && job.finishedAt !== null;
}

/** What {@link liveCallFence} reads and cuts. */
export interface LiveCallFenceDeps {
  store: Pick<Store, 'getJob'>;
  /** gateway.ts Gateway.liveJobs and abortJob. */
  liveJobs(): Map<number, Set<number>>;
  abortJob(jobId: number, beforeAttempt?: number): number;
  log: Logger;
  /** Default {@link LIVE_CALL_FENCE_MS}. */
  intervalMs?: number;
}

/**
 * Cuts the model calls this process's gateway serves for jobs that ended through another
 * replica. In one process a job's end reaches its live calls at once (live-call-aborts.ts, by
 * the event bus), but the bus is per process: a job cancelled through replica A while its agent
 * called replica B's gateway went on running there, each call served and charged in full after
 * the job's end (fresh-tester finding: 510 µ$ a call on B against A's 47 µ$ estimate, 6.7 s after
 * the cancel; and a budget pause's calls ran on). So every {@link LIVE_CALL_FENCE_MS}, while
 * calls are live here, their jobs are read back (one primary-key read per job) and the calls of
 * an attempt that {@link attemptCallsEnded} are aborted as a local cancel aborts them (settled
 * with the usage seen so far, or the estimate). Nothing is read while no call is live; a check
 * still running when the next is due is not doubled. Read errors are logged and retried at the
 * next tick.
 * @returns `check()` (one pass now; resolves to how many calls it cut) and `stop()`.
 */
export function liveCallFence(o: LiveCallFenceDeps): { check(): Promise<number>; stop(): void } {
  let running: Promise<number> | null = null;
  const pass = async (): Promise<number> => {
    let cut = 0;
    for (const [jobId, attempts] of o.liveJobs()) {
      const job = await o.store.getJob(jobId);
      let n: number;
      if (attemptCallsEnded(job, Math.max(...attempts))) n = o.abortJob(jobId);
      // an older attempt's calls beside the current one's: only those
      else if (job !== null && Math.min(...attempts) < job.attempt) n = o.abortJob(jobId, job.attempt);
      else continue;
      cut += n;
      // (a job ended through this process had its calls cut by its event already: n is 0 then)
      if (n > 0) o.log.info('cut the live model calls of a job that ended (read back from the store: ended through another replica)', { jobId, status: job?.status ?? 'gone', attempt: job?.attempt ?? null, calls: n });
    }
    return cut;
  };
  const check = (): Promise<number> =>
    (running ??= pass()
      .catch((err: unknown) => {
        o.log.warn('could not read the jobs of live model calls', { error: (err as Error).message });
        return 0;
      })
      .finally(() => (running = null)));
  const timer = setInterval(() => {
    if (o.liveJobs().size > 0) void check();
  }, o.intervalMs ?? LIVE_CALL_FENCE_MS);
  timer.unref();
  return { check, stop: () => clearInterval(timer) };
}

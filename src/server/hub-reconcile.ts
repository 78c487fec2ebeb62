import type { RunningJobReport } from '../protocol/index.js';
import { isTerminal, pausedHoldsRunner } from '../core/job-state.js';
import { pauseStop } from './budget-pause.js';
import type { Connection } from './hub-connection.js';
import type { HubOptions } from './hub.js';
import { endGoneAttempt } from './hub-lost-attempt.js';

// What a runner says it runs (hello, heartbeat, job.accepted) against the store (hub.ts).

/**
 * Compares what the runner says it runs with the store: a reported attempt that is not the
 * job's current one on this runner (or whose job ended or went back to the queue) gets
 * `job.cancel`; an active job the runner stops reporting for heartbeatTimeoutMs is requeued
 * (still `assigned`: the assignment never arrived; no retry used, but after 3 such requeues it
 * fails, `runner_never_started`: store/unstarted.ts) or ends as a lost runner's does (`running`:
 * retried when its agent has retries left, else `lost`). After a `hello` (`fresh`: the runner
 * came back, its list is what it runs now) a job it does not report gets one heartbeat
 * interval instead of the timeout: a runner restarted after a crash runs nothing.
 */
export async function reconcile(o: HubOptions, conn: Connection, running: readonly RunningJobReport[], fresh = false): Promise<void> {
  const { store, now } = o;
  for (const r of running) await checkCurrent(o, conn, r.jobId, r.attempt);
  const reported = new Set(running.map((r) => `${r.jobId}:${r.attempt}`));
  const active = await store.listActiveJobsForRunner(conn.runnerId);
  const activeIds = new Set(active.map((j) => j.id));
  for (const id of [...conn.missing.keys()]) if (!activeIds.has(id)) conn.missing.delete(id);
  const t = now();
  for (const job of active) {
    if (reported.has(`${job.id}:${job.attempt}`)) {
      conn.missing.delete(job.id);
      continue;
    }
    const m = conn.missing.get(job.id);
    if (!m || m.attempt !== job.attempt) {
      const grace = fresh ? o.heartbeatIntervalMs : o.heartbeatTimeoutMs;
      // `since` set back so that one check fits both graces; `noticedAt` for what the status says
      conn.missing.set(job.id, { attempt: job.attempt, since: t - (o.heartbeatTimeoutMs - grace), noticedAt: t });
      continue;
    }
    if (t - m.since < o.heartbeatTimeoutMs) continue;
    conn.missing.delete(job.id);
    // how long it went unreported, as it was: "(20s)" after a reconnect 5 s earlier read as made up (a fresh tester)
    const gone = (t - m.noticedAt) / 1000;
    const secs = gone < 10 ? gone.toFixed(1) : String(Math.round(gone));
    await endGoneAttempt(o, conn, job, {
      cause: `runner ${conn.name} no longer runs it (${secs}s)`,
      neverStarted: `runner ${conn.name} never started it (${secs}s)`,
      lostError: `runner ${conn.name} stopped reporting the job for ${secs}s`,
    });
  }
}

/** Sends `job.cancel` when (jobId, attempt) is not a live attempt of this runner. Returns true when it is live. */
export async function checkCurrent(o: Pick<HubOptions, 'store'>, conn: Connection, jobId: number, attempt: number): Promise<boolean> {
  const job = await o.store.getJob(jobId);
  let reason: string | null = null;
  if (!job) reason = 'unknown job';
  // A queued job is on no runner (store requeues clear it): say where it went, not "reassigned".
  else if (job.status === 'queued') reason = 'job went back to the queue';
  else if (job.attempt !== attempt || job.runnerId !== conn.runnerId) reason = 'stale attempt: the job was reassigned';
  else if (isTerminal(job.status)) reason = `job is ${job.status}`;
  else if (job.status === 'cancelling' || pausedHoldsRunner(job)) {
    // Still live until the runner reports the tree gone; repeat the cancel (or a budget pause's stop) in case it was missed.
    await conn.send(job.status === 'paused' ? pauseStop(jobId, attempt) : { type: 'job.cancel', jobId, attempt, reason: 'cancelled by request' });
    return true;
  }
  if (reason === null) return true;
  await conn.send({ type: 'job.cancel', jobId, attempt, reason, discard: true });
  return false;
}

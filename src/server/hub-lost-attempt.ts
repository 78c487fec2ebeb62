import type { JobRow } from '../store/types.js';
import { ATTEMPT_GIVEN_UP, RUNNER_STOPPED_REASON, type UploadedEvent } from '../protocol/index.js';
import type { Connection } from './hub-connection.js';
import type { HubOptions } from './hub.js';
import { recordStatus, reportEndedJobs } from './status-events.js';

/** What {@link endGoneAttempt} says about an attempt its runner no longer runs (the texts of its status events). */
export interface GoneAttempt {
  /** Why, for a started attempt: the status event of a retried or lost job ("runner box no longer runs it (20s)"). */
  cause: string;
  /** The same for an attempt never started (still `assigned`): "runner box never started it (20s)". */
  neverStarted: string;
  /** The `error` of a job that ends `lost` (no retry left). */
  lostError: string;
}

/**
 * Ends attempt `job.attempt` of `job` (assigned, running, cancelling or paused on `conn`'s
 * runner), which that runner no longer runs — it stopped reporting it (hub-reconcile.ts), or it
 * said it gave the attempt up with its processes gone (hub.ts, a `progress` event of phase
 * `lost`: a runner stopped with Ctrl-C or SIGTERM, or whose lease ran out). By status:
 * - `paused` (a budget pause holding the runner): `onPausedGone` (the pause no longer holds it);
 * - `assigned`: back in the queue with no retry used, or failed once it went back that way too
 *   often (store/unstarted.ts: a runner that takes jobs and never starts them must not keep one);
 * - `cancelling`: `cancelled` (its tree is gone with the attempt);
 * - `running`: back in the queue when its agent has retries left (store.retryLostJob), else
 *   `lost` (endReason `runner_lost`, error `why.lostError`).
 * Each change is conditional on the job's status and attempt (a job another path ended first is
 * left alone), gets its status event (`why`'s texts) and wakes the dispatcher.
 */
export async function endGoneAttempt(o: HubOptions, conn: Connection, job: JobRow, why: GoneAttempt): Promise<void> {
  const { store } = o;
  const t = o.now();
  if (job.status === 'paused') return void (await o.onPausedGone?.(job.id, job.attempt, why.cause));
  if (job.status === 'assigned') {
    const back = await store.requeueUnstartedJob(job.id, job.attempt, t);
    if (back?.status === 'queued') {
      await recordStatus(store, o.bus, job.id, 'queued', `${why.neverStarted}; back in the queue`, t, conn.runnerId);
      o.onWork('work');
    } else if (back) {
      await recordStatus(store, o.bus, job.id, back.status, `${why.neverStarted}; ${back.error ?? 'failed'}`, t, conn.runnerId);
      o.onWork('capacity');
    }
    return;
  }
  if (job.status === 'cancelling') {
    if (await store.transitionJob(job.id, job.attempt, ['cancelling'], 'cancelled', t, { endReason: 'cancelled' })) {
      await recordStatus(store, o.bus, job.id, 'cancelled', why.cause, t, conn.runnerId);
      o.onWork('capacity');
    }
    return;
  }
  if (job.status !== 'running') return;
  const retried = await store.retryLostJob(job.id, job.attempt, t);
  if (retried) {
    await reportEndedJobs(store, o.bus, [retried], () => why.cause, t);
    o.onWork('work');
    return;
  }
  const moved = await store.transitionJob(job.id, job.attempt, ['running'], 'lost', t, { endReason: 'runner_lost', error: why.lostError });
  if (moved) {
    await recordStatus(store, o.bus, job.id, 'lost', why.cause, t, conn.runnerId);
    o.onWork('capacity');
  }
}

/**
 * After a runner's `job.events` frame was stored: when it holds a `progress` event of phase
 * `lost` — the runner gave the attempt up and its processes are gone (stopped with Ctrl-C or
 * SIGTERM, or its lease ran out: runner.ts) — the attempt ends now through
 * {@link endGoneAttempt}, when it is still that job's attempt on this runner; a runner that
 * stops (RUNNER_STOPPED_REASON) gets no further job on this connection. Before, it stayed
 * `running` until the liveness sweep, ~20 s later, ended it as "runner X silent for 20s".
 */
export async function endGivenUpAttempt(o: HubOptions, conn: Connection, jobId: number, attempt: number, events: readonly UploadedEvent[]): Promise<void> {
  const lost = events.find((e) => e.type === 'progress' && e.data.phase === 'lost');
  if (lost === undefined || lost.type !== 'progress') return;
  const job = await o.store.getJob(jobId);
  if (!job || job.runnerId !== conn.runnerId || job.attempt !== attempt) return;
  conn.missing.delete(jobId);
  const text = lost.data.message;
  const detail = (text.startsWith(ATTEMPT_GIVEN_UP) ? text.slice(ATTEMPT_GIVEN_UP.length) : text).slice(0, 300);
  // A stopping runner closes this connection in a moment: no job goes to it before then (the
  // job requeued here would be offered to it, refused, and use up an attempt)
  if (detail === RUNNER_STOPPED_REASON) conn.holdUntil = Infinity;
  await endGoneAttempt(o, conn, job, {
    cause: `runner ${conn.name} gave the attempt up, its processes are gone: ${detail}`,
    neverStarted: `runner ${conn.name} gave it up before it started: ${detail}`,
    lostError: `runner ${conn.name} gave the attempt up: ${detail}`,
  });
}

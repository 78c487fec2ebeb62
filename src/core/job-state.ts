import type { JobStatus } from '../protocol/index.js';
import { TERMINAL_STATUSES } from '../protocol/index.js';

/**
 * The job state machine. Keys are the current status, values the statuses it may move to.
 * - queued → assigned (dispatch) | cancelled
 * - assigned → running (harness started) | queued (runner refused) | failed | cancelled | lost
 * - running → succeeded | failed | cancelled | lost | paused (tree out of budget)
 * - paused → queued (top-up, re-dispatch) | failed | cancelled | succeeded (its process, stopped
 *   by the pause, ended on its own with success before the stop landed: server/paused-exit.ts)
 * - assigned | running → cancelling (cancel requested) → cancelled once the runner reports the
 *   process tree gone (or succeeded/failed if it finished first; lost if the runner is lost)
 * Terminal states (succeeded, failed, cancelled, lost) never change.
 */
export const JOB_TRANSITIONS: Readonly<Record<JobStatus, readonly JobStatus[]>> = {
  queued: ['assigned', 'cancelled'],
  assigned: ['running', 'queued', 'failed', 'cancelled', 'lost', 'succeeded', 'paused', 'cancelling'],
  running: ['succeeded', 'failed', 'cancelled', 'lost', 'paused', 'cancelling'],
  cancelling: ['cancelled', 'succeeded', 'failed', 'lost'],
  paused: ['queued', 'failed', 'cancelled', 'succeeded'],
  succeeded: [],
  failed: [],
  cancelled: [],
  lost: [],
};

/** True when a job may move from `from` to `to`. */
export function canTransition(from: JobStatus, to: JobStatus): boolean {
  return JOB_TRANSITIONS[from].includes(to);
}

/** The statuses from which a job may reach `to` (for conditional UPDATEs). */
export function sourcesOf(to: JobStatus): JobStatus[] {
  return (Object.keys(JOB_TRANSITIONS) as JobStatus[]).filter((s) => JOB_TRANSITIONS[s].includes(to));
}

/** True for succeeded, failed, cancelled and lost. */
export function isTerminal(s: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(s);
}

/** Statuses in which a runner holds the job (and its token is live). */
export const ACTIVE_STATUSES: readonly JobStatus[] = ['assigned', 'running'];

/**
 * Statuses in which a runner holds the job and its processes may still exist: the active ones
 * plus `cancelling` (token dead, tree being killed). The job takes a capacity slot of its
 * runner and ends `lost` with it.
 */
export const HELD_STATUSES: readonly JobStatus[] = ['assigned', 'running', 'cancelling'];

/**
 * True while a `paused` job's attempt still holds its runner: the pause (tree out of budget)
 * told the runner to stop the process (grace, then SIGKILL of its group) and the runner has not
 * yet reported the attempt ended. Its `finishedAt` stays null until that report (then it is the
 * time the process ended); such a job keeps its capacity slot and is not resumed before it, so
 * one job never has two processes at once (server/paused-exit.ts).
 */
export function pausedHoldsRunner(job: { status: JobStatus; finishedAt: number | null; runnerId: number | null }): boolean {
  return job.status === 'paused' && job.finishedAt === null && job.runnerId !== null;
}

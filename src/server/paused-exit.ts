import type { Logger } from '../core/log.js';
import type { JobEvent } from '../protocol/index.js';
import type { Store } from '../store/types.js';
import type { EventBus } from './event-bus.js';
import { recordStatus } from './status-events.js';

/**
 * What happens when a runner reports `job.finished` for an attempt of a job that is `paused`
 * (issue 3: the gateway refused a call for budget and server/budget-pause.ts paused the job
 * and told the runner to stop its process, SIGTERM, grace, SIGKILL of the group, keeping the
 * workspace and the harness session). Until that report the paused attempt keeps its runner
 * slot (store listActiveAssignments counts a paused job with finishedAt null).
 *
 * The runner (JobRun.pause) first lets the harness exit on the refusal by itself for a short
 * settle time and then reports the harness's own outcome; a harness still running after it is
 * stopped and reported `cancelled` ("paused for budget").
 *
 * Outcomes, decided here so that nothing is dropped silently:
 * - `succeeded`: the process finished its work on its own before the stop landed. The frame's
 *   own move already ended the job `succeeded` with its result (server/frame-move.ts lets a
 *   success end a paused job): a top-up would only rerun finished work. Nothing to do here.
 * - `cancelled` (our stop) or `failed` (e.g. the harness exiting on the 402): the job stays
 *   `paused` for the top-up, its slot is freed (store.endPausedAttempt: finishedAt = now) and a
 *   `status` event says how the attempt ended. If the tree was topped up while the process was
 *   still stopping (endReason `budget_resume`), the job is requeued now, in the same session and
 *   pinned to the same runner (its workspace), so the resumed attempt never overlaps the old one.
 *
 * `onWork` wakes the dispatcher (a slot was freed, or a job queued). Errors are logged.
 * @returns the bus tap to register with EventBus.tap (it sees the events a runner frame stored).
 */
export function pausedExitTap(o: PausedExitDeps) {
  return (jobId: number, events: readonly JobEvent[]): void => {
    for (const e of events) {
      // attempt.ended: the hub's record of a paused attempt's job.finished (paused-attempt-end.ts);
      // a job.finished that is not a success: one that raced the pause
      if (e.type !== 'attempt.ended' && (e.type !== 'job.finished' || e.data.status === 'succeeded')) continue;
      const d = e.data;
      void (async () => {
        const job = await o.store.getJob(jobId);
        if (!job || job.status !== 'paused' || job.finishedAt !== null) return;
        await pausedAttemptEnded(o, jobId, job.attempt, pausedAttemptHow(job.attempt, d.status, d.reason), d.sessionId);
      })().catch((err: unknown) => o.log.error('could not settle a paused job whose attempt ended', { jobId, error: (err as Error).message }));
      return;
    }
  };
}

/**
 * How a paused job's attempt ended, in words that do not read as the job being cancelled
 * (fresh-tester finding: "attempt 1 ended cancelled (cancelled); still paused for budget"):
 * `cancelled` is the runner's stop for the pause; another status is the harness's own exit on
 * the budget refusal.
 */
export function pausedAttemptHow(attempt: number, status: string, reason?: string | null): string {
  if (status === 'cancelled') return `attempt ${attempt} stopped for the pause (its harness was ended)`;
  return `attempt ${attempt}'s harness exited on the budget refusal (${status}${reason ? `, ${reason}` : ''})`;
}

/** What {@link pausedExitTap} and {@link pausedAttemptEnded} use. */
export interface PausedExitDeps {
  store: Store;
  bus: EventBus;
  log: Logger;
  now: () => number;
  onWork: () => void;
}

/**
 * Attempt `attempt` of paused job `jobId` no longer runs (`how`: its report, or the hub's "runner
 * no longer runs it" when the runner stopped reporting it, e.g. it restarted before sending
 * its `job.finished`): frees its slot or resumes it (store.endPausedAttempt), with a `status`
 * event, and wakes the dispatcher. Nothing when the job is not paused-and-held at that attempt.
 */
export async function pausedAttemptEnded(o: PausedExitDeps, jobId: number, attempt: number, how: string, sessionId?: string): Promise<void> {
  const now = o.now();
  const row = await o.store.endPausedAttempt(jobId, attempt, now, sessionId);
  if (!row) return;
  // A resumed job is queued, on no runner: its pin names the runner the attempt ran on.
  const runnerId = row.runnerId ?? row.pinnedRunnerId ?? undefined;
  if (row.status === 'queued') {
    await recordStatus(o.store, o.bus, jobId, 'queued', `${how}; room for its refused call came meanwhile (budget topped up, or room another job held freed): resuming${row.resumeSessionId ? ` session ${row.resumeSessionId}` : ''}`, now, runnerId);
  } else {
    await recordStatus(o.store, o.bus, jobId, 'paused', `${how}; still paused for budget: its workspace and session are kept, a top-up resumes it, or room other jobs hold coming back (flotilla budget ${jobId} says which)`, now, runnerId);
  }
  o.log.info('paused job attempt ended', { jobId, attempt, how, resumed: row.status === 'queued' });
  o.onWork();
}

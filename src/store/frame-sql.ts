import type { Updateable } from 'kysely';
import { TERMINAL_STATUSES, type JobStatus } from '../protocol/index.js';
import type { FrameEvent, FrameMove, RefusedFrameJob } from './runner-frame.js';
import type { JobsTable } from './schema.js';

/** A frame as runner-frame.ts frameSql prepared it for the engines' paths. */
export interface FrameSql {
  jobId: number;
  attempt: number;
  runnerId: number;
  /** Deduplicated by rseq, rseq ascending; none after the frame's first `job.finished` (see `afterFinish`). */
  events: readonly FrameEvent[];
  /**
   * The frame's own `job.finished` had events after it: they were left out of `events` (the
   * attempt ends at its `job.finished`); `finishedRseq` is its rseq, `refused` how many. Null: none.
   */
  afterFinish: AfterFinish | null;
  /** The move's statuses it may leave and columns it writes (jobs.ts transitionPlan); null: no move. */
  plan: { allowed: JobStatus[]; set: Updateable<JobsTable> } | null;
  /** started_at = coalesce(started_at, this) when set. */
  startedAtIfUnset: number | undefined;
  /** The move collects children's results: a job with children goes to the transaction path. */
  needKids: boolean;
  /** The frame's move, cut to the per-event size cap (frame-cap.ts): what the transaction path applies. */
  move?: FrameMove;
}

/** True when the job as read refuses the frame: on another runner, lost or queued, or at another attempt. */
export function refuses(job: NonNullable<RefusedFrameJob>, q: Pick<FrameSql, 'runnerId' | 'attempt'>): boolean {
  return job.runnerId !== q.runnerId || job.status === 'lost' || job.status === 'queued' || job.attempt !== q.attempt;
}

/** Events of an attempt refused because they follow its `job.finished` (rseq `finishedRseq`): `refused` of them. */
export interface AfterFinish {
  finishedRseq: number;
  refused: number;
}

/**
 * True when a frame for the job's current attempt must go to runner-frame.ts's transaction
 * path because the job has ended (a terminal status other than `lost`, which refuses): only
 * that path looks up the attempt's stored `job.finished` to refuse what follows it. Rare (a
 * resend after the end), so the fast paths stay one statement.
 */
export function endedForFrame(status: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/**
 * True when the frame's first event leaves a gap after the attempt's highest stored rseq
 * `topRseq` (0: none): events must be stored with no rseq missing, so that the acknowledged
 * `upTo` means every event up to it is stored (the runner forgets them). A frame starting at or
 * below `topRseq + 1` repeats or continues; the hub checks that a frame has no gap inside
 * (frame-checks.ts).
 */
export function leavesGap(q: Pick<FrameSql, 'events'>, topRseq: number): boolean {
  const first = q.events[0];
  return first !== undefined && first.rseq > topRseq + 1;
}

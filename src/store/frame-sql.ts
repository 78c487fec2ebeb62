import type { Updateable } from 'kysely';
import type { JobStatus } from '../protocol/index.js';
import type { FrameEvent, RefusedFrameJob } from './runner-frame.js';
import type { JobsTable } from './schema.js';

/** A frame as runner-frame.ts frameSql prepared it for the engines' paths. */
export interface FrameSql {
  jobId: number;
  attempt: number;
  runnerId: number;
  /** Deduplicated by rseq, rseq ascending. */
  events: readonly FrameEvent[];
  /** The move's statuses it may leave and columns it writes (jobs.ts transitionPlan); null: no move. */
  plan: { allowed: JobStatus[]; set: Updateable<JobsTable> } | null;
  /** started_at = coalesce(started_at, this) when set. */
  startedAtIfUnset: number | undefined;
  /** The move collects children's results: a job with children goes to the transaction path. */
  needKids: boolean;
}

/** True when the job as read refuses the frame: on another runner, lost or queued, or at another attempt. */
export function refuses(job: NonNullable<RefusedFrameJob>, q: Pick<FrameSql, 'runnerId' | 'attempt'>): boolean {
  return job.runnerId !== q.runnerId || job.status === 'lost' || job.status === 'queued' || job.attempt !== q.attempt;
}

import type { EventBody, JobEvent } from '../protocol/index.js';
import type { ClaimedJob, ClaimRequest } from './claim-batch.js';
import type { DispatchHead } from './dispatch-head.js';
import type { NewJobAssignment } from './job-enqueue.js';
import type { QueuedJobEvent } from './queued-events.js';
import type { DispatchState, OwnerLimits } from './dispatch-state.js';
import type { FrameOutcome, RunnerFrame } from './runner-frame.js';
import type { JobRow, NewJob } from './types.js';

export type { ClaimedJob, ClaimRequest, DispatchHead, DispatchState, FrameOutcome, NewJobAssignment, OwnerLimits, QueuedJobEvent, RunnerFrame };
export type { FrameEvent, FrameMove, RefusedFrameJob } from './runner-frame.js';

/** The dispatch hot path's part of the Store (issue 5 benchmark): fewer statements and round trips per job. */
export interface DispatchStore {
  /**
   * Enqueues a root job with its first event (seq 1) atomically; with `assign`, assigned in the
   * same write with its `assigned` event (seq 2): see store/job-enqueue.ts.
   * @throws Error when `parentId` is not null.
   */
  createRootJobWithEvent(j: NewJob, event: EventBody, assign?: NewJobAssignment): Promise<{ job: JobRow; event: JobEvent; assigned?: JobEvent }>;
  /**
   * Claims several queued jobs for their planned runners, each with its event, in one
   * transaction (PostgreSQL: `FOR UPDATE SKIP LOCKED`, one statement per batch); claims that no
   * longer hold are left out. See store/claim-batch.ts.
   */
  claimJobsById(claims: readonly ClaimRequest[], now: number): Promise<ClaimedJob[]>;
  /** The queue's first `limit` jobs and the runners held at `now`, from one snapshot on PostgreSQL: see store/dispatch-head.ts. */
  listDispatchHead(limit: number, now: number): Promise<DispatchHead>;
  /**
   * listDispatchHead + listActiveAssignments + listTaskSlots(now) in one call (PostgreSQL: one
   * statement, one snapshot): what a dispatch pass reads first. See store/dispatch-state.ts.
   */
  listDispatchState(limit: number, now: number): Promise<DispatchState>;
  /**
   * A runner's `job.events` frame in one store call: its events appended (fenced by runner and
   * attempt, deduplicated by rseq) and the status change they carry applied, in one
   * transaction (PostgreSQL: one statement when the job has no children to collect). `now`
   * epoch ms (finished_at). See store/runner-frame.ts.
   * @throws Error when a number is not an integer or the move is invalid.
   */
  applyRunnerFrame(frame: RunnerFrame, now: number): Promise<FrameOutcome>;
  /**
   * Server-made events on many jobs in one transaction, each stored (with its job's next seq,
   * rseq null, `at` = `now`) only if its job is `queued` then; the rest are left out. The
   * dispatcher's "why it waits" notes (PostgreSQL: one statement, `FOR UPDATE SKIP LOCKED`).
   * Returns the stored events in `events` order; see store/queued-events.ts.
   * @throws Error when a job id appears twice or a number is not an integer (nothing stored).
   */
  appendEventsIfQueued(events: readonly QueuedJobEvent[], now: number): Promise<JobEvent[]>;
}

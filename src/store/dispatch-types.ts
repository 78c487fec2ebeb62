import type { EventBody, JobEvent } from '../protocol/index.js';
import type { ClaimedJob, ClaimRequest } from './claim-batch.js';
import type { DispatchHead } from './dispatch-head.js';
import type { JobRow, NewJob } from './types.js';

export type { ClaimedJob, ClaimRequest, DispatchHead };

/** The dispatch hot path's part of the Store (issue 5 benchmark): fewer statements and round trips per job. */
export interface DispatchStore {
  /**
   * Enqueues a root job with its first event (seq 1) atomically: see store/job-enqueue.ts.
   * @throws Error when `parentId` is not null.
   */
  createRootJobWithEvent(j: NewJob, event: EventBody): Promise<{ job: JobRow; event: JobEvent }>;
  /**
   * Claims several queued jobs for their planned runners, each with its event, in one
   * transaction (PostgreSQL: `FOR UPDATE SKIP LOCKED`, 4 round trips per batch); claims that no
   * longer hold are left out. See store/claim-batch.ts.
   */
  claimJobsById(claims: readonly ClaimRequest[], now: number): Promise<ClaimedJob[]>;
  /** The queue's first `limit` jobs and the runners held at `now`, from one snapshot on PostgreSQL: see store/dispatch-head.ts. */
  listDispatchHead(limit: number, now: number): Promise<DispatchHead>;
}

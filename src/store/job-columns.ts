import type { JobsTable } from './schema.js';

/**
 * The `jobs` columns that codec.ts toJobRow reads, for statements that list their result
 * columns instead of `*` (prepared statements keep their result shape when a later migration
 * adds a column: pg-prepared.ts).
 */
export const JOB_ROW_COLUMNS = [
  'id',
  'parent_id',
  'root_id',
  'agent',
  'agent_version',
  'input',
  'status',
  'end_reason',
  'error',
  'priority',
  'selector',
  'runner_id',
  'attempt',
  'budget_micros',
  'session_id',
  'resume_session_id',
  'result',
  'created_at',
  'assigned_at',
  'started_at',
  'finished_at',
  'retries_left',
  'pinned_runner_id',
  'workspace_job_id',
  'effort_tier',
  'paused_need_micros',
  'resumed_at',
] as const satisfies ReadonlyArray<keyof JobsTable>;

import type { Insertable, Updateable } from 'kysely';
import type { JobResult, JobStatus } from '../protocol/index.js';
import { JobStatus as JobStatusSchema } from '../protocol/index.js';
import { ACTIVE_STATUSES, HELD_STATUSES, canTransition, isTerminal } from '../core/job-state.js';
import { childRefusal } from '../core/job-tree.js';
import { num, storable, toJobRow, type Codec } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { JobsTable } from './schema.js';
import type { JobListQuery, JobRow, NewJob } from './types.js';
import { pausedHolding } from './paused-hold.js';

/** A child that would break its tree's depth or job-count limit (NewJob.treeLimits); the message names the limit and the figures. Nothing was stored. */
export class TreeLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TreeLimitError';
  }
}

/**
 * Inserts a queued job (attempt 0). A root job (`parentId` null) gets rootId = its own id;
 * a child inherits its parent's rootId. One transaction; with `treeLimits` the tree's limits
 * are checked inside it while the root job's row is locked (see NewJob.treeLimits).
 * @throws TreeLimitError when a child would break `treeLimits`;
 *   Error when the parent does not exist or a number field is not an integer.
 */
export async function createJob(c: StoreCtx, j: NewJob): Promise<JobRow> {
  assertInt('priority', j.priority);
  assertInt('budgetMicros', j.budgetMicros, 0);
  assertInt('now', j.now, 0);
  if (j.retries !== undefined) assertInt('retries', j.retries, 0);
  if (j.parentId !== null) assertInt('parentId', j.parentId, 1);
  return c.db.transaction().execute(async (trx) => {
    let rootId: number | null = null;
    if (j.parentId !== null) {
      const parent = await trx.selectFrom('jobs').select('root_id').where('id', '=', j.parentId).executeTakeFirst();
      if (!parent) throw new Error(`store: createJob: parentId ${j.parentId} does not exist`);
      rootId = num(parent.root_id);
      if (j.treeLimits) {
        // The root's row lock serialises child creation per tree across server processes; in
        // READ COMMITTED the SELECT after it sees every child committed by the lock's last holder.
        if (c.dialect === 'postgres') await trx.selectFrom('jobs').select('id').where('id', '=', rootId).forUpdate().execute();
        const tree = await trx.selectFrom('jobs').select(['id', 'parent_id']).where('root_id', '=', rootId).execute();
        const refusal = childRefusal(tree.map((t) => ({ id: num(t.id), parentId: t.parent_id === null ? null : num(t.parent_id) })), j.parentId, j.treeLimits);
        if (refusal) throw new TreeLimitError(refusal);
      }
    }
    const inserted = await trx
      .insertInto('jobs')
      .values(newJobValues(c, j, rootId ?? 0)) // a root's own id, set just below
      .returningAll()
      .executeTakeFirstOrThrow();
    if (rootId !== null) return toJobRow(c.codec, inserted);
    const root = await trx.updateTable('jobs').set({ root_id: inserted.id }).where('id', '=', inserted.id).returningAll().executeTakeFirstOrThrow();
    return toJobRow(c.codec, root);
  });
}

/** The row a new queued job is inserted as (attempt 0), with `rootId` as its root (0 for a root until its id is known). */
export function newJobValues(c: StoreCtx, j: NewJob, rootId: number): Insertable<JobsTable> {
  return {
    parent_id: j.parentId,
    root_id: rootId,
    agent: j.agent,
    agent_version: j.agentVersion,
    input: c.codec.json(j.input),
    status: 'queued',
    end_reason: null,
    error: null,
    priority: j.priority,
    selector: c.codec.json(j.selector),
    runner_id: null,
    attempt: 0,
    budget_micros: j.budgetMicros,
    session_id: null,
    resume_session_id: j.resumeSessionId ?? null,
    retries_left: j.retries ?? 0,
    pinned_runner_id: j.pinnedRunnerId ?? null,
    workspace_job_id: j.workspaceJobId ?? null,
    effort_tier: j.effortTier ?? null,
    result: null,
    token_hash: null,
    created_at: j.now,
    assigned_at: null,
    started_at: null,
    finished_at: null,
  };
}

export async function getJob(c: StoreCtx, id: number): Promise<JobRow | null> {
  const row = await c.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toJobRow(c.codec, row) : null;
}

/** Newest first (id descending), at most `limit` (1–1000); `before` pages to ids < before. */
export async function listJobs(c: StoreCtx, q: JobListQuery): Promise<JobRow[]> {
  assertInt('limit', q.limit, 1);
  if (q.limit > 1000) throw new Error(`store: limit must be at most 1000, got ${q.limit}`);
  if (q.before !== undefined) assertInt('before', q.before);
  if (q.runnerId !== undefined) assertInt('runnerId', q.runnerId, 1);
  if (q.createdFrom !== undefined) assertInt('createdFrom', q.createdFrom, 0);
  if (q.createdTo !== undefined) assertInt('createdTo', q.createdTo, 0);
  let sel = c.db.selectFrom('jobs').selectAll();
  if (q.status !== undefined) sel = sel.where('status', '=', q.status);
  if (q.agent !== undefined) sel = sel.where('agent', '=', q.agent);
  if (q.runnerId !== undefined) sel = sel.where('runner_id', '=', q.runnerId);
  if (q.createdFrom !== undefined) sel = sel.where('created_at', '>=', q.createdFrom);
  if (q.createdTo !== undefined) sel = sel.where('created_at', '<', q.createdTo);
  if (q.before !== undefined) sel = sel.where('id', '<', q.before);
  const rows = await sel.orderBy('id', 'desc').limit(q.limit).execute();
  return rows.map((r) => toJobRow(c.codec, r));
}

/**
 * One conditional UPDATE ... RETURNING: applies when the job's attempt equals `attempt` (null:
 * any) and its status is in `from` (statuses in `from` from which core/job-state.ts forbids
 * `to` are dropped). Terminal `to`: finishedAt = now, token cleared. `to` = queued: runner,
 * assignedAt and token cleared (it will be dispatched again). Returns the new row or null.
 * @throws Error when no status in `from` may move to `to` (a programming error).
 */
export async function transitionJob(
  c: StoreCtx,
  jobId: number,
  attempt: number | null,
  from: readonly JobStatus[],
  to: JobStatus,
  now: number,
  fields: TransitionFields = {},
): Promise<JobRow | null> {
  const { allowed, set } = transitionPlan(c.codec, from, to, now, fields);
  let upd = c.db.updateTable('jobs').set(set).where('id', '=', jobId).where('status', 'in', allowed);
  if (attempt !== null) upd = upd.where('attempt', '=', attempt);
  const row = await upd.returningAll().executeTakeFirst();
  return row ? toJobRow(c.codec, row) : null;
}

/** The fields {@link transitionJob} may set besides the status (times epoch ms). */
export interface TransitionFields {
  endReason?: string | null;
  error?: string | null;
  sessionId?: string | null;
  result?: JobResult | null;
  startedAt?: number;
}

/**
 * What a transition to `to` writes, as {@link transitionJob} applies it: `allowed` = the
 * statuses of `from` that core/job-state.ts lets move to `to`; `set` = the columns (terminal
 * `to`: finished_at = now, token cleared; `to` = queued: runner, assigned_at and token cleared).
 * @throws Error when `to` is not a status, no status in `from` may move to `to`, or a time is not an integer.
 */
export function transitionPlan(codec: Codec, from: readonly JobStatus[], to: JobStatus, now: number, fields: TransitionFields): { allowed: JobStatus[]; set: Updateable<JobsTable> } {
  if (!JobStatusSchema.safeParse(to).success) throw new Error(`store: transitionJob: to is not a job status: ${JSON.stringify(to)}`);
  const allowed = from.filter((s) => canTransition(s, to));
  if (allowed.length === 0) throw new Error(`store: transitionJob: no status in from [${from.join(', ')}] may move to ${to}`);
  assertInt('now', now, 0);
  if (fields.startedAt !== undefined) assertInt('startedAt', fields.startedAt, 0);
  const set: Updateable<JobsTable> = { status: to };
  if (fields.endReason !== undefined) set.end_reason = fields.endReason;
  if (fields.error !== undefined) set.error = fields.error === null ? null : storable(fields.error);
  if (fields.sessionId !== undefined) set.session_id = fields.sessionId;
  if (fields.result !== undefined) set.result = fields.result === null ? null : codec.json(fields.result);
  if (fields.startedAt !== undefined) set.started_at = fields.startedAt;
  if (isTerminal(to)) {
    set.finished_at = now;
    set.token_hash = null;
  }
  if (to === 'queued') {
    set.runner_id = null;
    set.assigned_at = null;
    set.token_hash = null;
  }
  return { allowed, set };
}

/** An assigned job the runner refused goes back to queued (fenced by attempt). True when it did. */
export async function requeueJob(c: StoreCtx, jobId: number, attempt: number, now: number): Promise<boolean> {
  return (await transitionJob(c, jobId, attempt, ['assigned'], 'queued', now)) !== null;
}

/** The job holding this live token (status assigned or running), or null. */
export async function findJobByTokenHash(c: StoreCtx, tokenHash: string): Promise<JobRow | null> {
  const row = await c.db
    .selectFrom('jobs')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('status', 'in', [...ACTIVE_STATUSES])
    .executeTakeFirst();
  return row ? toJobRow(c.codec, row) : null;
}

/**
 * The job paused for budget (`status: paused`, `end_reason: budget`) whose token has this hash,
 * or null. A budget pause keeps the token's hash (budget-pause.ts pauseJobForBudget) so the gateway
 * can answer that job's harness with the budget refusal instead of a 401 (issue 3); the
 * token authenticates nothing else (findJobByTokenHash wants a live status), and resume or any
 * end clears it.
 */
export async function findPausedJobByTokenHash(c: StoreCtx, tokenHash: string): Promise<JobRow | null> {
  const row = await c.db.selectFrom('jobs').selectAll().where('token_hash', '=', tokenHash).where('status', '=', 'paused').where('end_reason', '=', 'budget').executeTakeFirst();
  return row ? toJobRow(c.codec, row) : null;
}

/**
 * Jobs in assigned, running or cancelling on this runner, and budget-paused ones whose stopped
 * attempt the runner has not reported gone (finished_at null; core/job-state.ts
 * pausedHoldsRunner), by id ascending.
 */
export async function listActiveJobsForRunner(c: StoreCtx, runnerId: number): Promise<JobRow[]> {
  const rows = await c.db
    .selectFrom('jobs')
    .selectAll()
    .where('runner_id', '=', runnerId)
    .where((eb) => eb.or([eb('status', 'in', [...HELD_STATUSES]), pausedHolding(eb)]))
    .orderBy('id', 'asc')
    .execute();
  return rows.map((r) => toJobRow(c.codec, r));
}

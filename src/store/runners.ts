import { sql, type SelectQueryBuilder, type Transaction } from 'kysely';
import type { Labels } from '../protocol/index.js';
import { ACTIVE_STATUSES, HELD_STATUSES } from '../core/job-state.js';
import { parseHolds } from '../core/capacity.js';
import { num, numOrNull, toJobRow, toRunnerRow } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { Database } from './schema.js';
import type { ActiveAssignment, JobRow, RevokedRunner, QueuedJobRef, RunnerHold, RunnerRow, SweptJob } from './types.js';
import { pausedHolding } from './paused-hold.js';
import { unstartedSet } from './unstarted.js';

/** Registers a runner (not yet connected, no heartbeat). @throws on a duplicate credential hash or bad capacity. */
export async function createRunner(
  c: StoreCtx,
  r: { name: string; labels: Labels; capacity: number; credentialHash: string; now: number; hold?: RunnerHold; boundLabels?: Labels; browserSlots?: number },
): Promise<RunnerRow> {
  assertInt('capacity', r.capacity, 1);
  if (r.browserSlots !== undefined) assertInt('browserSlots', r.browserSlots, 1);
  assertInt('now', r.now, 0);
  if (r.hold) assertInt('hold.until', r.hold.until, 0);
  const row = await c.db
    .insertInto('runners')
    .values({
      name: r.name,
      labels: c.codec.json(r.labels),
      capacity: r.capacity,
      version: null,
      credential_hash: r.credentialHash,
      connected: 0,
      offline: 0,
      last_heartbeat_at: null,
      created_at: r.now,
      hold_until: r.hold?.until ?? null,
      hold_reason: r.hold?.reason ?? null,
      hold_kind: r.hold?.kind ?? null,
      bound_labels: c.codec.json(r.boundLabels ?? {}),
      browser_slots: r.browserSlots ?? 1,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toRunnerRow(c.codec, row);
}

export async function findRunnerByCredentialHash(c: StoreCtx, credentialHash: string): Promise<RunnerRow | null> {
  const row = await c.db.selectFrom('runners').selectAll().where('credential_hash', '=', credentialHash).executeTakeFirst();
  return row ? toRunnerRow(c.codec, row) : null;
}

export async function getRunner(c: StoreCtx, id: number): Promise<RunnerRow | null> {
  const row = await c.db.selectFrom('runners').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toRunnerRow(c.codec, row) : null;
}

/** All runners, by id ascending. */
export async function listRunners(c: StoreCtx): Promise<RunnerRow[]> {
  const rows = await c.db.selectFrom('runners').selectAll().orderBy('id', 'asc').execute();
  return rows.map((r) => toRunnerRow(c.codec, r));
}

/**
 * Heartbeat / (re)connect: connected, not offline, last heartbeat = now, plus the given fields.
 * With `conn`: only while that connection holds the runner (runner-instance.ts). False when
 * unknown, revoked, or (`conn`) held by another connection.
 */
export async function touchRunner(
  c: StoreCtx,
  id: number,
  now: number,
  fields: { labels?: Labels; capacity?: number; browserSlots?: number; version?: string; name?: string; conn?: string } = {},
): Promise<boolean> {
  assertInt('now', now, 0);
  if (fields.capacity !== undefined) assertInt('capacity', fields.capacity, 1);
  if (fields.browserSlots !== undefined) assertInt('browserSlots', fields.browserSlots, 1);
  let q = c.db
    .updateTable('runners')
    .set({
      connected: 1,
      offline: 0,
      last_heartbeat_at: now,
      ...(fields.labels !== undefined ? { labels: c.codec.json(fields.labels) } : {}),
      ...(fields.capacity !== undefined ? { capacity: fields.capacity } : {}),
      ...(fields.browserSlots !== undefined ? { browser_slots: fields.browserSlots } : {}),
      ...(fields.version !== undefined ? { version: fields.version } : {}),
      ...(fields.name !== undefined ? { name: fields.name } : {}),
    })
    .where('id', '=', id)
    .where('revoked_at', 'is', null);
  if (fields.conn !== undefined) q = q.where('instance_conn', '=', fields.conn);
  const res = await q.executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** The runner's WebSocket closed: connected = false. Its jobs are left alone. */
export async function setRunnerDisconnected(c: StoreCtx, id: number, _now: number): Promise<void> {
  await c.db.updateTable('runners').set({ connected: 0 }).where('id', '=', id).execute();
}

/**
 * Liveness sweep, one transaction: runners whose last heartbeat (or, never having sent one,
 * whose creation) is older than `cutoff` and that are not yet offline become offline and
 * disconnected; then every `assigned` job on an offline runner (never started there) goes back
 * to `queued` with no retry used (`unstarted: true` in the result), or fails (`runner_never_started`,
 * also `unstarted: true`) when it went back that way MAX_UNSTARTED_REQUEUES times already
 * (unstarted.ts); every other active job
 * ends as in {@link endJobsOf} (endReason `runner_lost`). All steps are conditional UPDATEs, so
 * two servers sweeping at once never report the same job twice.
 * @returns the jobs changed by this call, by id ascending, each with `runnerId` = its attempt's runner.
 */
export async function sweepStaleRunners(c: StoreCtx, cutoff: number, now: number): Promise<SweptJob[]> {
  assertInt('cutoff', cutoff);
  assertInt('now', now, 0);
  return c.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('runners')
      .set({ offline: 1, connected: 0 })
      .where('offline', '=', 0)
      .where((eb) =>
        eb.or([
          eb('last_heartbeat_at', '<', cutoff),
          eb.and([eb('last_heartbeat_at', 'is', null), eb('created_at', '<', cutoff)]),
        ]),
      )
      .execute();
    const offline = trx.selectFrom('runners').select('id').where('offline', '=', 1);
    // Assigned but never started: the runner never took it up, so it goes back to the queue as a
    // refusal would (hub-reconcile.ts), not as a lost attempt: no retry is used — unless it went
    // back that way MAX_UNSTARTED_REQUEUES times already: then it fails (unstarted.ts).
    const unstarted = await trx
      .updateTable('jobs')
      .set(unstartedSet(now))
      .where('status', '=', 'assigned')
      .where('runner_id', 'in', offline)
      .returningAll()
      .execute();
    await requeuedFromRunner(trx, unstarted.filter((r) => r.status === 'queued').map((r) => num(r.id)));
    const ended: SweptJob[] = await endJobsOf(c, trx, offline, 'runner_lost', now);
    return [...unstarted.map((r): SweptJob => ({ ...toJobRow(c.codec, r), unstarted: true })), ...ended].sort((a, b) => a.id - b.id);
  });
}

/**
 * Ends the assigned/running jobs on the runners `runnerIds` selects (inside `trx`): a job
 * with retries left goes back to `queued` (runner, assignment, start and token cleared, retries
 * left − 1: a queued job is on no runner; never a `cancelling` one); a `cancelling` one becomes
 * `cancelled` (endReason `cancelled`: what was asked for); every other one becomes `lost` with
 * `reason`; finishedAt = now, token cleared. All are conditional UPDATEs. Returns the changed
 * jobs by id ascending, each with `runnerId` = the runner its attempt was on (for a requeued
 * one that is not what is stored: {@link requeuedFromRunner}).
 * A budget-paused job whose stopped attempt still held one of these runners stays `paused` (a
 * top-up resumes it) but no longer holds it: finishedAt = now (its process went with the
 * runner), and a pending resume (`budget_resume`) goes back to `budget`, to be resumed by the
 * next top-up (it is pinned to that runner anyway). Not among the returned jobs.
 */
async function endJobsOf(
  c: StoreCtx,
  trx: Transaction<Database>,
  runnerIds: SelectQueryBuilder<Database, 'runners', { id: number }>,
  reason: string,
  now: number,
): Promise<JobRow[]> {
  const retried = await trx
    .updateTable('jobs')
    .set((eb) => ({
      status: 'queued',
      assigned_at: null,
      started_at: null,
      token_hash: null,
      retries_left: eb('retries_left', '-', 1),
    }))
    // Only jobs still meant to run (never one being cancelled) go back to the queue.
    .where('status', 'in', ['assigned', 'running'])
    .where('runner_id', 'in', runnerIds)
    .where('retries_left', '>', 0)
    .returningAll()
    .execute();
  await requeuedFromRunner(trx, retried.map((r) => num(r.id)));
  // A job being cancelled is cancelled: its process went with the runner (or is killed when the
  // runner starts again), which is what the cancel asked for (a fresh user's `jobs cancel` read
  // `lost` and exited 1 when the runner died meanwhile).
  const cancelled = await trx
    .updateTable('jobs')
    .set({ status: 'cancelled', end_reason: 'cancelled', finished_at: now, token_hash: null })
    .where('status', '=', 'cancelling')
    .where('runner_id', 'in', runnerIds)
    .returningAll()
    .execute();
  // why, in the job's own `error` (`jobs show` said only `runner_lost`; the reason was in its
  // status event alone: a fresh tester), the status event's words without the seconds
  const why = sql<string>`(select case when r.revoked_at is not null then 'runner ' || r.name || ' was revoked; its lease ran out' else 'runner ' || r.name || ' went silent: no heartbeat within the heartbeat timeout' end from runners r where r.id = jobs.runner_id)`;
  const lost = await trx
    .updateTable('jobs')
    .set({ status: 'lost', end_reason: reason, finished_at: now, token_hash: null, error: why })
    .where('status', 'in', [...HELD_STATUSES])
    .where('runner_id', 'in', runnerIds)
    .returningAll()
    .execute();
  await trx
    .updateTable('jobs')
    .set({ finished_at: now, end_reason: 'budget' })
    .where('status', '=', 'paused')
    .where('finished_at', 'is', null)
    .where('end_reason', 'in', ['budget', 'budget_resume'])
    .where('runner_id', 'in', runnerIds)
    .execute();
  return [...retried, ...cancelled, ...lost].map((r) => toJobRow(c.codec, r)).sort((a, b) => a.id - b.id);
}

/**
 * A lost attempt of job `id` goes back to the queue for a retry when the job has retries left:
 * one conditional UPDATE (status `assigned`/`running`, this `attempt`, retries left > 0) to
 * `queued`, with assignment, start and token cleared and retries left − 1, then its runner
 * cleared ({@link requeuedFromRunner}), in one transaction, as {@link endJobsOf} does for a
 * lost runner's jobs.
 * @returns the requeued job with `runnerId` = the runner the attempt was lost on (stored: none),
 *   or null when it has no retry left or is no longer that attempt.
 */
export async function retryLostJob(c: StoreCtx, id: number, attempt: number, now: number): Promise<JobRow | null> {
  assertInt('id', id, 1);
  assertInt('attempt', attempt, 1);
  assertInt('now', now, 0);
  return c.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('jobs')
      .set((eb) => ({ status: 'queued', assigned_at: null, started_at: null, token_hash: null, retries_left: eb('retries_left', '-', 1) }))
      .where('id', '=', id)
      .where('attempt', '=', attempt)
      .where('status', 'in', ['assigned', 'running'])
      .where('retries_left', '>', 0)
      .returningAll()
      .executeTakeFirst();
    if (row) await requeuedFromRunner(trx, [id]);
    return row ? toJobRow(c.codec, row) : null;
  });
}

/**
 * The second half of a lost attempt's requeue (inside its transaction): the jobs `ids`, now
 * `queued`, are on no runner (runner_id null), as every job back in the queue (jobs.ts
 * transitionPlan): listings and the API show no runner for them, and `GET /api/jobs?runner=`
 * no longer lists them. Fencing does not need the old runner: a frame, `job.accepted` or
 * report for a queued job is refused by its status, and the next claim sets a new runner and
 * attempt. The runner an attempt ran on stays in the job's `status` events (runner-attempts.ts).
 */
async function requeuedFromRunner(trx: Transaction<Database>, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await trx.updateTable('jobs').set({ runner_id: null }).where('id', 'in', [...ids]).where('status', '=', 'queued').execute();
}

/** Sets or (null) clears the dispatch hold. @returns the updated runner, or null when unknown. */
export async function setRunnerHold(c: StoreCtx, id: number, hold: RunnerHold | null): Promise<RunnerRow | null> {
  if (hold) {
    assertInt('hold.until', hold.until, 0);
    if (hold.kind !== 'manual' && hold.kind !== 'provisioning') throw new Error(`store: hold.kind must be manual or provisioning, got ${JSON.stringify(hold.kind)}`);
  }
  const row = await c.db
    .updateTable('runners')
    .set({ hold_until: hold?.until ?? null, hold_reason: hold?.reason ?? null, hold_kind: hold?.kind ?? null })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
  return row ? toRunnerRow(c.codec, row) : null;
}

/** Ids of runners held past `now`, ascending. */
export async function listHeldRunnerIds(c: StoreCtx, now: number): Promise<number[]> {
  assertInt('now', now, 0);
  const rows = await c.db.selectFrom('runners').select('id').where('hold_until', '>', now).orderBy('id').execute();
  return rows.map((r) => num(r.id));
}

/**
 * Revokes runner `id` in one transaction: revokedAt = now (kept from the first call),
 * disconnected; the job tokens of its assigned/running/cancelling jobs are cleared at once
 * (findJobByTokenHash no longer finds them: the gateway and API refuse them), but the jobs
 * themselves are left to the liveness sweep ({@link sweepStaleRunners}), which ends them
 * (retry, `cancelled` or `lost`) once the runner's last heartbeat is older than the heartbeat
 * timeout: the runner holds its jobs as a lease and stops them by then (runner/lease.ts), so
 * a retry never runs beside an attempt the revoked runner is still stopping. `offline` is
 * left as it is for the same reason (the sweep ends the jobs of every offline runner at once).
 * @returns the runner and the jobs whose tokens this call cleared (by id ascending; still
 *   active), or null when the runner does not exist.
 */
export async function revokeRunner(c: StoreCtx, id: number, now: number): Promise<RevokedRunner | null> {
  assertInt('now', now, 0);
  return c.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('runners')
      // its hold goes with it: a revoked runner takes no job anyway (it still listed as held: tester finding)
      .set({ revoked_at: sql<number>`coalesce(revoked_at, ${now})`, connected: 0, hold_until: null, hold_reason: null, hold_kind: null })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    if (!row) return null;
    const jobs = await trx
      .updateTable('jobs')
      .set({ token_hash: null })
      .where('runner_id', '=', id)
      .where('status', 'in', ['assigned', 'running', 'cancelling'])
      .where('token_hash', 'is not', null)
      .returningAll()
      .execute();
    // A session kept on this runner can never resume: a job paused for budget on it, or queued
    // to resume there (pinned), is lost now. A top-up took the money and said "resumed" for a
    // job that then stayed queued for ever (fresh-tester finding).
    const error = `its session and workspace are kept on runner ${row.name} (${id}), which was revoked: it cannot resume; start a new run`;
    const stranded = await trx
      .updateTable('jobs')
      // paused_need_micros stays: a resumed job queued here held room with it, and the server's
      // hook for an ended holder (server/budget-pause.ts endedHoldTap) reads it to give the room back
      .set({ status: 'lost', end_reason: 'runner_revoked', error, finished_at: sql<number>`coalesce(finished_at, ${now})`, token_hash: null })
      .where((eb) =>
        eb.or([
          eb.and([eb('status', '=', 'paused'), eb('runner_id', '=', id)]),
          eb.and([eb('status', '=', 'queued'), eb('pinned_runner_id', '=', id)]),
        ]),
      )
      .returningAll()
      .execute();
    const byId = (a: JobRow, b: JobRow) => a.id - b.id;
    return { runner: toRunnerRow(c.codec, row), jobs: jobs.map((r) => toJobRow(c.codec, r)).sort(byId), stranded: stranded.map((r) => toJobRow(c.codec, r)).sort(byId) };
  });
}

/**
 * Every assigned/running job with its runner, plus every budget-paused job whose stopped
 * attempt still holds its runner (finished_at null: the runner has not reported its process
 * gone), one query (uses jobs_runner_status): what takes a runner's capacity.
 */
export async function listActiveAssignments(c: StoreCtx): Promise<ActiveAssignment[]> {
  const rows = await c.db
    .selectFrom('jobs')
    .select(['id', 'runner_id', 'attempt', 'status', 'holds', 'workspace_job_id'])
    // + a budget-paused attempt whose process the runner has not reported gone (core/job-state.ts pausedHoldsRunner)
    .where((eb) => eb.or([eb('status', 'in', [...ACTIVE_STATUSES]), pausedHolding(eb)]))
    .where('runner_id', 'is not', null)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    jobId: num(r.id),
    runnerId: num(r.runner_id),
    attempt: num(r.attempt),
    status: r.status as ActiveAssignment['status'],
    holds: parseHolds(r.holds),
    workspace: numOrNull(r.workspace_job_id) ?? num(r.id),
  }));
}

/** The runner's latest jobs, newest first. @throws when limit is not 1–100. */
export async function listRecentJobsForRunner(c: StoreCtx, runnerId: number, limit: number): Promise<JobRow[]> {
  assertInt('limit', limit, 1);
  if (limit > 100) throw new Error(`store: limit must be at most 100, got ${limit}`);
  const rows = await c.db.selectFrom('jobs').selectAll().where('runner_id', '=', runnerId).orderBy('id', 'desc').limit(limit).execute();
  return rows.map((r) => toJobRow(c.codec, r));
}

/** Jobs waiting in the queue (uses jobs_status_id). */
export async function countQueuedJobs(c: StoreCtx): Promise<number> {
  const row = await c.db.selectFrom('jobs').select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'queued').executeTakeFirstOrThrow();
  return num(row.n);
}

/**
 * Queued jobs in dispatch order (uses jobs_dispatch), after the `after` position when given
 * (keyset paging: lower priority, or the same priority and a higher id).
 * @throws when limit is not 1–5000.
 */
export async function listQueuedForDispatch(c: StoreCtx, limit: number, after?: { priority: number; id: number }): Promise<QueuedJobRef[]> {
  assertInt('limit', limit, 1);
  if (limit > 5000) throw new Error(`store: limit must be at most 5000, got ${limit}`);
  let q = c.db
    .selectFrom('jobs')
    .select(['id', 'priority', 'selector', 'pinned_runner_id', 'agent', 'agent_version', 'workspace_job_id'])
    .where('status', '=', 'queued');
  if (after) {
    q = q.where((eb) => eb.or([eb('priority', '<', after.priority), eb.and([eb('priority', '=', after.priority), eb('id', '>', after.id)])]));
  }
  const rows = await q
    .orderBy('priority', 'desc')
    .orderBy('id', 'asc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: num(r.id),
    priority: num(r.priority),
    selector: c.codec.parse(r.selector) as Labels,
    pinnedRunnerId: numOrNull(r.pinned_runner_id),
    agent: r.agent,
    agentVersion: r.agent_version,
    workspaceJobId: numOrNull(r.workspace_job_id),
  }));
}

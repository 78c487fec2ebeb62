import { CompiledQuery } from 'kysely';
import type { EventBody, JobEvent, JobHolds } from '../protocol/index.js';
import { toJobEvent, toJobRow } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { JOB_ROW_COLUMNS } from './job-columns.js';
import { PREPARE } from './pg-prepared.js';
import { newJobValues } from './jobs.js';
import type { JobRow, NewJob } from './types.js';

/**
 * A new job's assignment made with its creation (server/dispatcher.ts placeNew: the dispatcher
 * matched it to `runnerId` from a dispatch-state read in which the queue was empty): the job is
 * stored `assigned` (attempt 1, the job token's hash, what it holds, assignedAt = its createdAt)
 * with `event` (`status` "assigned to runner ...") at seq 2.
 */
export interface NewJobAssignment {
  runnerId: number;
  tokenHash: string;
  holds: JobHolds;
  event: EventBody;
}

/**
 * Enqueue a root job (`parentId` null: rootId = its own id) together with its first event
 * (seq 1, attempt 0, `at` = `j.now` as ISO-8601) — what `POST /api/jobs` stores as "queued,
 * waiting for a runner" — atomically, so the job is never seen without that event. Nobody can
 * append to a job before it is committed, so seq 1 needs no lock. With `assign`, the job is
 * assigned in the same write ({@link NewJobAssignment}, its event at seq 2, attempt 1): one
 * commit instead of two between `POST /api/jobs` and the runner's `job.assign` (issue 5).
 * - PostgreSQL: one statement (the id from the `jobs` sequence, job and events inserted by
 *   CTEs): one round trip; prepared once per connection (pg-prepared.ts).
 * - SQLite: one transaction (insert, root id, events).
 * @throws Error when `parentId` is not null (children go through createJob: tree limits, the
 *   parent's root) or a number field is not an integer.
 */
export async function createRootJobWithEvent(c: StoreCtx, j: NewJob, event: EventBody, assign?: NewJobAssignment): Promise<{ job: JobRow; event: JobEvent; assigned?: JobEvent }> {
  if (j.parentId !== null) throw new Error('store: createRootJobWithEvent: parentId must be null (a child job goes through createJob)');
  assertInt('priority', j.priority);
  assertInt('budgetMicros', j.budgetMicros, 0);
  assertInt('now', j.now, 0);
  if (j.retries !== undefined) assertInt('retries', j.retries, 0);
  if (assign) assertInt('assign.runnerId', assign.runnerId, 1);
  const at = new Date(j.now).toISOString();
  const data = c.codec.json(event.data);
  const values = newJobValues(c, j, 0);
  if (assign) Object.assign(values, { status: 'assigned', attempt: 1, runner_id: assign.runnerId, token_hash: assign.tokenHash, holds: assign.holds, assigned_at: j.now });
  if (c.dialect === 'postgres') {
    const r = await c.db.executeQuery<Record<string, unknown>>(
      CompiledQuery.raw(CREATE_ROOT_JOB, [
        j.agent,
        j.agentVersion,
        values.input,
        j.priority,
        values.selector,
        j.budgetMicros,
        values.resume_session_id,
        values.retries_left,
        values.pinned_runner_id,
        values.workspace_job_id,
        values.effort_tier,
        j.now,
        event.type,
        data,
        at,
        assign?.runnerId ?? null,
        assign?.tokenHash ?? null,
        assign?.holds ?? null,
        assign?.event.type ?? null,
        assign ? c.codec.json(assign.event.data) : null,
      ]),
    );
    const rows = r.rows.sort((a, b) => (a.ev_seq as number) - (b.ev_seq as number));
    const ev = (row: Record<string, unknown>) => toJobEvent(c.codec, { job_id: row.id as number, seq: row.ev_seq as number, type: row.ev_type as string, data: row.ev_data, at: row.ev_at as string });
    const out = { job: toJobRow(c.codec, rows[0] as never), event: ev(rows[0]!) };
    return rows[1] ? { ...out, assigned: ev(rows[1]) } : out;
  }
  return c.db.transaction().execute(async (trx) => {
    const inserted = await trx.insertInto('jobs').values(values).returning('id').executeTakeFirstOrThrow();
    const row = await trx.updateTable('jobs').set({ root_id: inserted.id }).where('id', '=', inserted.id).returningAll().executeTakeFirstOrThrow();
    const ev = { job_id: row.id, seq: 1, attempt: 0, rseq: null, type: event.type, data, at };
    await trx.insertInto('job_events').values(ev).execute();
    const out = { job: toJobRow(c.codec, row), event: toJobEvent(c.codec, ev) };
    if (!assign) return out;
    const ev2 = { job_id: row.id, seq: 2, attempt: 1, rseq: null, type: assign.event.type, data: c.codec.json(assign.event.data), at };
    await trx.insertInto('job_events').values(ev2).execute();
    return { ...out, assigned: toJobEvent(c.codec, ev2) };
  });
}

/**
 * The PostgreSQL statement of {@link createRootJobWithEvent}, fixed (built once, not by Kysely
 * per job: its building was ~80 µs of the server thread per `POST /api/jobs`, bench/dispatch):
 * the id from the `jobs` sequence, the job (root_id = id) and its events inserted by CTEs. The
 * columns not listed take the values newJobValues gives a new job (null, 0) from their defaults
 * (0001 and later migrations). $1 agent, $2 agent_version, $3 input, $4 priority, $5 selector,
 * $6 budget_micros, $7 resume_session_id, $8 retries_left, $9 pinned_runner_id,
 * $10 workspace_job_id, $11 effort_tier, $12 created_at (epoch ms); the event's $13 type,
 * $14 data, $15 at (ISO-8601); the assignment ({@link NewJobAssignment}, all null without one):
 * $16 runner_id, $17 token_hash, $18 holds, its event's $19 type and $20 data.
 * Rows: one per event (seq 1, and 2 when assigned), each with the whole job.
 */
const CREATE_ROOT_JOB = `${PREPARE}
      with n as (select nextval(pg_get_serial_sequence('jobs', 'id'))::int as id),
      j as (
        insert into jobs (id, root_id, parent_id, agent, agent_version, input, status, priority, selector, attempt, budget_micros,
          resume_session_id, retries_left, pinned_runner_id, workspace_job_id, effort_tier, created_at,
          runner_id, token_hash, holds, assigned_at)
        values ((select id from n), (select id from n), null, $1, $2, $3,
          case when $16::int is null then 'queued' else 'assigned' end, $4, $5,
          case when $16::int is null then 0 else 1 end, $6, $7, $8, $9, $10, $11, $12::bigint,
          $16::int, $17::text, $18::text, case when $16::int is null then null else $12::bigint end)
        returning ${JOB_ROW_COLUMNS.join(', ')}
      ),
      e as (
        insert into job_events (job_id, seq, attempt, rseq, type, data, at)
        select j.id, 1, 0, null::int, $13::text, $14::jsonb, $15::text from j
        union all
        select j.id, 2, 1, null::int, $19::text, $20::jsonb, $15::text from j where $16::int is not null
        returning job_id, seq, type, data, at
      )
      select j.*, e.seq as ev_seq, e.type as ev_type, e.data as ev_data, e.at as ev_at from j, e`;

import { sql } from 'kysely';
import type { EventBody, JobEvent } from '../protocol/index.js';
import { toJobEvent, toJobRow } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { JOB_ROW_COLUMNS } from './job-columns.js';
import { PREPARE } from './pg-prepared.js';
import { newJobValues } from './jobs.js';
import type { JobRow, NewJob } from './types.js';

/**
 * Enqueue a root job (`parentId` null: rootId = its own id) together with its first event
 * (seq 1, attempt 0, `at` = `j.now` as ISO-8601) — what `POST /api/jobs` stores as "queued,
 * waiting for a runner" — atomically, so the job is never seen without that event. Nobody can
 * append to a job before it is committed, so seq 1 needs no lock.
 * - PostgreSQL: one statement (the id from the `jobs` sequence, job and event inserted by CTEs):
 *   one round trip instead of two transactions; prepared once per connection (pg-prepared.ts).
 * - SQLite: one transaction (insert, root id, event).
 * @throws Error when `parentId` is not null (children go through createJob: tree limits, the
 *   parent's root) or a number field is not an integer.
 */
export async function createRootJobWithEvent(c: StoreCtx, j: NewJob, event: EventBody): Promise<{ job: JobRow; event: JobEvent }> {
  if (j.parentId !== null) throw new Error('store: createRootJobWithEvent: parentId must be null (a child job goes through createJob)');
  assertInt('priority', j.priority);
  assertInt('budgetMicros', j.budgetMicros, 0);
  assertInt('now', j.now, 0);
  if (j.retries !== undefined) assertInt('retries', j.retries, 0);
  const at = new Date(j.now).toISOString();
  const data = c.codec.json(event.data);
  const values = newJobValues(c, j, 0) as Record<string, unknown>;
  if (c.dialect === 'postgres') {
    const cols = Object.keys(values).filter((k) => k !== 'root_id');
    const r = await sql<Record<string, unknown>>`${sql.raw(PREPARE)}
      with n as (select nextval(pg_get_serial_sequence('jobs', 'id'))::int as id),
      j as (
        insert into jobs (id, root_id, ${sql.join(cols.map((k) => sql.ref(k)))})
        values ((select id from n), (select id from n), ${sql.join(cols.map((k) => sql`${values[k]}`))})
        returning ${sql.join(JOB_ROW_COLUMNS.map((k) => sql.ref(k)))}
      ),
      e as (
        insert into job_events (job_id, seq, attempt, rseq, type, data, at)
        select j.id, 1, 0, null, ${event.type}, ${data}::jsonb, ${at} from j
        returning job_id, seq, type, data, at
      )
      select j.*, e.seq as ev_seq, e.type as ev_type, e.data as ev_data, e.at as ev_at from j, e`.execute(c.db);
    const row = r.rows[0]!;
    return {
      job: toJobRow(c.codec, row as never),
      event: toJobEvent(c.codec, { job_id: row.id as number, seq: row.ev_seq as number, type: row.ev_type as string, data: row.ev_data, at: row.ev_at as string }),
    };
  }
  return c.db.transaction().execute(async (trx) => {
    const inserted = await trx.insertInto('jobs').values(newJobValues(c, j, 0)).returning('id').executeTakeFirstOrThrow();
    const row = await trx.updateTable('jobs').set({ root_id: inserted.id }).where('id', '=', inserted.id).returningAll().executeTakeFirstOrThrow();
    const ev = { job_id: row.id, seq: 1, attempt: 0, rseq: null, type: event.type, data, at };
    await trx.insertInto('job_events').values(ev).execute();
    return { job: toJobRow(c.codec, row), event: toJobEvent(c.codec, ev) };
  });
}

import { sql } from 'kysely';
import type { JobStatus } from '../protocol/index.js';
import { flag, num, numOrNull, toJobEvent, toJobRow } from './codec.js';
import type { StoreCtx } from './ctx.js';
import { JOB_ROW_COLUMNS } from './job-columns.js';
import { PREPARE } from './pg-prepared.js';
import { endedForFrame, leavesGap, refuses, type FrameSql } from './frame-sql.js';
import type { FrameOutcome } from './runner-frame.js';

/** PostgreSQL's unique_violation. */
const UNIQUE_VIOLATION = '23505';

/**
 * The PostgreSQL fast path of applyRunnerFrame (runner-frame.ts): lock the job row, check it,
 * append the events and apply the move in ONE statement (data-modifying CTEs, autocommit: one
 * round trip; prepared once per connection, pg-prepared.ts: a few texts, by the move's columns). 'retry' when the transaction path must do it instead: the job has children and
 * the move collects their results; the job has ended (its attempt's stored job.finished is
 * looked up there); the frame would leave an rseq missing after the highest stored one (this
 * statement's snapshot may predate a concurrent writer's commit, so the transaction path, which
 * reads after taking the lock, decides whether it is a gap); or the statement hit a unique key.
 * In the first three cases the statement wrote nothing. A unique key is hit only
 * when another writer committed events of this job after this statement's snapshot (it waited
 * for the row lock): its seq and rseq reads are of that snapshot, so the insert then collides
 * with the (job_id, seq) primary key or the (job_id, attempt, rseq) unique index instead of
 * storing a duplicate; the whole statement is rolled back. The job row itself is read through
 * the lock (READ COMMITTED re-reads a locked row's newest version), so fencing by runner,
 * status and attempt sees the latest committed row, and the UPDATE re-checks its conditions.
 * @throws Error from the driver, except a unique violation.
 */
export async function applyFramePg(c: StoreCtx, q: FrameSql): Promise<FrameOutcome | 'retry'> {
  const rseqs = q.events.map((e) => e.rseq);
  const types = q.events.map((e) => e.type);
  const datas = q.events.map((e) => c.codec.json(e.data));
  const ats = q.events.map((e) => e.at);
  const plan = q.plan;
  const sets = plan
    ? [
        ...Object.entries(plan.set).map(([k, v]) => sql`${sql.ref(k)} = ${v}`),
        ...(q.startedAtIfUnset !== undefined ? [sql`started_at = coalesce(jobs.started_at, ${q.startedAtIfUnset})`] : []),
      ]
    : [];
  const upd = plan
    ? sql`, upd as (
        update jobs set ${sql.join(sets)}
        where id = ${q.jobId} and attempt = ${q.attempt} and status = any(${plan.allowed}::text[]) and exists (select 1 from g)
        returning ${sql.join(JOB_ROW_COLUMNS.map((k) => sql.ref(`jobs.${k}`)))}
      )`
    : sql``;
  let r;
  try {
    r = await sql<Record<string, unknown>>`${sql.raw(PREPARE)}
      with j as materialized (
        select attempt, runner_id, status, ${q.needKids} and exists (select 1 from jobs k where k.parent_id = jobs.id) as has_kids
        from jobs where id = ${q.jobId}
        for update
      ), ok as materialized (
        select 1 from j where attempt = ${q.attempt} and runner_id = ${q.runnerId} and status not in ('lost', 'queued', 'succeeded', 'failed', 'cancelled') and not has_kids
      ), s as materialized (
        select coalesce(max(seq), 0) as max_seq, coalesce(max(case when attempt = ${q.attempt} then rseq end), 0) as top_rseq
        from job_events where job_id = ${q.jobId} and exists (select 1 from ok)
      ), g as materialized (
        select 1 from s where exists (select 1 from ok) and ${q.events[0]?.rseq ?? 0}::int <= s.top_rseq + 1
      ), f as materialized (
        select e.rseq, e.type, e.data, e.at, row_number() over (order by e.rseq) as n
        from unnest(${rseqs}::int[], ${types}::text[], ${datas}::jsonb[], ${ats}::text[]) as e(rseq, type, data, at)
        where exists (select 1 from g)
          and not exists (select 1 from job_events x where x.job_id = ${q.jobId} and x.attempt = ${q.attempt} and x.rseq = e.rseq)
      ), ins as (
        insert into job_events (job_id, seq, attempt, rseq, type, data, at)
        select ${q.jobId}, s.max_seq + f.n, ${q.attempt}, f.rseq, f.type, f.data, f.at from f cross join s
        returning rseq
      )${upd}
      select j.attempt as f_attempt, j.runner_id as f_runner_id, j.status as f_status, j.has_kids as f_has_kids,
        s.top_rseq as f_top_rseq, s.max_seq as f_max_seq, (select array_agg(ins.rseq) from ins) as f_inserted
        ${plan ? sql`, u.*` : sql``}
      from (select 1) as one left join j on true left join s on true ${plan ? sql`left join upd u on true` : sql``}`.execute(c.db);
  } catch (err) {
    if ((err as { code?: unknown }).code === UNIQUE_VIOLATION) return 'retry';
    throw err;
  }
  return frameOutcomeOfRow(c, q, datas, r.rows[0]!);
}

/**
 * A frame's outcome from its row of the frame statement (this file's, or one row of
 * runner-frame-pg-batch.ts's): `f_attempt`/`f_runner_id`/`f_status`/`f_has_kids` of the locked
 * job, `f_max_seq`/`f_top_rseq` before the insert, `f_inserted` the rseqs inserted, and the moved
 * job's columns when the frame had a move. 'retry' (the statement wrote nothing for the frame)
 * for a job with children to collect, an ended job, or a frame that would leave a gap. `datas` are the events' data as the JSON text written.
 * Inserted events got max_seq + their rank among the new ones (rseq ascending), as in the
 * statement; what was stored (after codec sanitising) is parsed from that text.
 */
export function frameOutcomeOfRow(c: StoreCtx, q: FrameSql, datas: readonly string[], row: Record<string, unknown>): FrameOutcome | 'retry' {
  if (row.f_attempt === null) return { accepted: false, job: null };
  if (flag(row.f_has_kids)) return 'retry';
  const job = { runnerId: numOrNull(row.f_runner_id), status: row.f_status as JobStatus, attempt: num(row.f_attempt) };
  if (refuses(job, q)) return { accepted: false, job };
  // Nothing was written for these (the statement's ok/g): the transaction path decides.
  if (endedForFrame(job.status) || leavesGap(q, num(row.f_top_rseq))) return 'retry';
  const inserted = new Set(((row.f_inserted as unknown[] | null) ?? []).map(num));
  let seq = num(row.f_max_seq);
  let upTo = num(row.f_top_rseq);
  const stored = [];
  for (let i = 0; i < q.events.length; i++) {
    const e = q.events[i]!;
    if (!inserted.has(e.rseq)) continue;
    stored.push(toJobEvent(c.codec, { job_id: q.jobId, seq: ++seq, type: e.type, data: JSON.parse(datas[i]!) as unknown, at: e.at }));
    upTo = Math.max(upTo, e.rseq);
  }
  const moved = q.plan && row.id !== null && row.id !== undefined ? toJobRow(c.codec, row as never) : null;
  return { accepted: true, stored, upTo, moved, ...(q.afterFinish ? { afterFinish: q.afterFinish } : {}) };
}

import { CompiledQuery, sql } from 'kysely';
import type { EventBody, JobEvent, JobHolds, Labels } from '../protocol/index.js';
import { toJobEvent, toJobRow } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { JOB_ROW_COLUMNS } from './job-columns.js';
import { PREPARE } from './pg-prepared.js';
import { runnerTakesJobs, runnerTakesJobsSql } from './claim-runner.js';
import type { JobRow } from './types.js';

/**
 * One planned assignment for {@link claimJobsById}: give queued job `jobId` to `runner`
 * (only if still queued, its selector ⊆ `runner.labels`, it is not pinned elsewhere, and the
 * store has the runner neither revoked nor offline: claim-runner.ts),
 * with the job token's hash and what the job holds on the runner (0009 `holds`), and store
 * `event` (usually `status` "assigned to runner ...") in the same transaction.
 */
export interface ClaimRequest {
  jobId: number;
  runner: { id: number; labels: Labels };
  tokenHash: string;
  holds: JobHolds;
  event: EventBody;
}

/** A claim that took: the assigned job (attempt + 1) and the event stored with it. */
export interface ClaimedJob {
  job: JobRow;
  event: JobEvent;
}

/**
 * Batch dispatch: claims each job of `claims` for its runner, as {@link claimJobById} does
 * one (status assigned, attempt + 1, runner, assignedAt = `now` epoch ms, token hash, holds),
 * and stores each claimed job's `event` with the job's next seq, all in one transaction —
 * so the `assigned` event exists exactly when the claim does. Claims that do not hold (job
 * taken meanwhile, cancelled, selector or pin no longer fits, runner revoked or offline) are left out of the result;
 * the rest are returned in `claims` order.
 * - PostgreSQL: one UPDATE ... FROM unnest(...) whose (materialized) CTE locks the wanted rows in id order
 *   with `FOR UPDATE SKIP LOCKED` (another replica's claim, or any writer holding the row,
 *   makes it skip that job this pass instead of waiting: no deadlock between batches), and the
 *   INSERT of the events, in one statement (one round trip; see claimPg for the rare case it is
 *   redone as a transaction whose INSERT reads seq after the rows are locked: READ COMMITTED, a
 *   fresh snapshot sees every event committed by an earlier lock holder; later appenders wait
 *   for this commit in lockJob).
 * - SQLite (one writer): per claim, the conditional UPDATE of claimJobById and an INSERT ...
 *   SELECT max(seq) + 1, inside one transaction.
 * @throws Error when a job id appears twice, or a number is not an integer.
 */
export async function claimJobsById(c: StoreCtx, claims: readonly ClaimRequest[], now: number): Promise<ClaimedJob[]> {
  checkClaims(claims, now);
  if (claims.length === 0) return [];
  const at = new Date(now).toISOString();
  const out = c.dialect === 'postgres' ? await claimPg(c, claims, now, at) : await claimSqlite(c, claims, now, at);
  const order = new Map(claims.map((q, i) => [q.jobId, i]));
  return out.sort((a, b) => order.get(a.job.id)! - order.get(b.job.id)!);
}

/**
 * The checks of {@link claimJobsById} (also run by the SQLite fast path, sqlite-fast.ts).
 * @throws Error when a job id appears twice, or a number is not an integer.
 */
export function checkClaims(claims: readonly ClaimRequest[], now: number): void {
  assertInt('now', now, 0);
  const seen = new Set<number>();
  for (const q of claims) {
    assertInt('jobId', q.jobId, 1);
    assertInt('runner.id', q.runner.id, 1);
    if (seen.has(q.jobId)) throw new Error(`store: claimJobsById: job ${q.jobId} appears twice in one batch`);
    seen.add(q.jobId);
  }
}

/** PostgreSQL's unique_violation. */
const UNIQUE_VIOLATION = '23505';

/**
 * PostgreSQL: first the whole batch in ONE statement (one round trip instead of four; prepared
 * once per connection, pg-prepared.ts): the claims and their events by data-modifying CTEs, the
 * events' seq read in the same statement.
 * That read is of the statement's snapshot: an event appended to one of these queued jobs by a
 * writer that committed after the snapshot (and so released the row lock SKIP LOCKED would
 * have skipped) is not in it, and the event insert then hits the (job_id, seq) primary key
 * instead of storing a duplicate; the statement rolls back whole and the batch is claimed by
 * {@link claimPgLocked}, which reads seq after the rows are locked.
 */
async function claimPg(c: StoreCtx, claims: readonly ClaimRequest[], now: number, at: string): Promise<ClaimedJob[]> {
  try {
    return await claimPgOneStatement(c, claims, now, at);
  } catch (err) {
    if ((err as { code?: unknown }).code !== UNIQUE_VIOLATION) throw err;
    return claimPgLocked(c, claims, now, at);
  }
}

/**
 * The claims' rows locked (ids of the still claimable ones), from CTE `want` (job_id ascending):
 * one index lookup per wanted job (a LATERAL subquery with FOR UPDATE is never flattened into a
 * join), in job id order, `SKIP LOCKED`. A join of `jobs` with `want` let the planner scan every
 * queued job per claim whenever it thought few were queued (a table not yet analyzed, as
 * bench/dispatch's, or stale statistics before a burst): O(queue) per batch. The UPDATE that
 * follows finds its rows by id alone (the same planner choice otherwise): each was `queued` in
 * its newest version when it was locked here, and stays so under the lock until this statement
 * writes it.
 */
const LOCK_WANTED = `
      select l.id from want w cross join lateral (
        select j.id from jobs j
        where j.id = w.job_id and j.status = 'queued' and j.selector <@ w.labels and (j.pinned_runner_id is null or j.pinned_runner_id = w.runner_id)
          and ${runnerTakesJobsSql('w.runner_id')}
        for update of j skip locked
      ) l`;

/**
 * The text of {@link claimPgOneStatement}, fixed (parameters as arrays): built once, not by
 * Kysely per batch (its query building and compiling were a few % of the server thread per
 * job, bench/dispatch). $1–$7 the claims' columns, $8 now (epoch ms), $9 the events' `at`.
 */
const CLAIM_ONE_STATEMENT = `${PREPARE}
    with want as materialized (
      select * from unnest($1::int[], $2::int[], $3::jsonb[], $4::text[], $5::text[], $6::text[], $7::jsonb[])
        as w(job_id, runner_id, labels, token_hash, holds, ev_type, ev_data)
      order by job_id
    ), locked as materialized (${LOCK_WANTED}), upd as (
      update jobs set status = 'assigned', runner_id = w.runner_id, assigned_at = $8, token_hash = w.token_hash, holds = w.holds, attempt = jobs.attempt + 1
      from locked l, want w
      where jobs.id = l.id and w.job_id = l.id
      returning ${JOB_ROW_COLUMNS.map((k) => `jobs.${k}`).join(', ')}
    ), ev as (
      insert into job_events (job_id, seq, attempt, rseq, type, data, at)
      select u.id, coalesce((select max(x.seq) from job_events x where x.job_id = u.id), 0) + 1, u.attempt, null, w.ev_type, w.ev_data, $9
      from upd u join want w on w.job_id = u.id
      returning job_id, seq, type, data, at
    )
    select u.*, e.seq as ev_seq, e.type as ev_type, e.data as ev_data, e.at as ev_at from upd u join ev e on e.job_id = u.id`;

async function claimPgOneStatement(c: StoreCtx, claims: readonly ClaimRequest[], now: number, at: string): Promise<ClaimedJob[]> {
  const params = [
    claims.map((q) => q.jobId),
    claims.map((q) => q.runner.id),
    claims.map((q) => c.codec.json(q.runner.labels)),
    claims.map((q) => q.tokenHash),
    claims.map((q) => q.holds),
    claims.map((q) => q.event.type),
    claims.map((q) => c.codec.json(q.event.data)),
    now,
    at,
  ];
  const r = await c.db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(CLAIM_ONE_STATEMENT, params));
  return r.rows.map((row) => ({
    job: toJobRow(c.codec, row as never),
    event: toJobEvent(c.codec, { job_id: row.id as number, seq: row.ev_seq as number, type: row.ev_type as string, data: row.ev_data, at: row.ev_at as string }),
  }));
}

/** The batch in one transaction of 4 round trips: lock and claim, then the events with seq read after the lock. Exported for its test (claim-batch-pg.test.ts): it runs only after a rare unique-key collision. */
export async function claimPgLocked(c: StoreCtx, claims: readonly ClaimRequest[], now: number, at: string): Promise<ClaimedJob[]> {
  const ids = claims.map((q) => q.jobId);
  const runners = claims.map((q) => q.runner.id);
  const labels = claims.map((q) => c.codec.json(q.runner.labels));
  const hashes = claims.map((q) => q.tokenHash);
  const holds = claims.map((q) => q.holds);
  return c.db.transaction().execute(async (trx) => {
    const rows = await sql<Record<string, unknown>>`
      with want as materialized (
        select * from unnest(${ids}::int[], ${runners}::int[], ${labels}::jsonb[], ${hashes}::text[], ${holds}::text[])
          as w(job_id, runner_id, labels, token_hash, holds)
        order by job_id
      ), locked as materialized (${sql.raw(LOCK_WANTED)})
      update jobs set status = 'assigned', runner_id = w.runner_id, assigned_at = ${now}, token_hash = w.token_hash, holds = w.holds, attempt = jobs.attempt + 1
      from locked l, want w
      where jobs.id = l.id and w.job_id = l.id
      returning jobs.*`.execute(trx);
    if (rows.rows.length === 0) return [];
    const jobs = rows.rows.map((r) => toJobRow(c.codec, r as never));
    const byId = new Map(claims.map((q) => [q.jobId, q]));
    const evIds = jobs.map((j) => j.id);
    const evAttempts = jobs.map((j) => j.attempt);
    const evTypes = jobs.map((j) => byId.get(j.id)!.event.type);
    const evData = jobs.map((j) => c.codec.json(byId.get(j.id)!.event.data));
    const evs = await sql<{ job_id: number; seq: number; type: string; data: unknown; at: string }>`
      insert into job_events (job_id, seq, attempt, rseq, type, data, at)
      select e.job_id, coalesce((select max(x.seq) from job_events x where x.job_id = e.job_id), 0) + 1, e.attempt, null, e.type, e.data, ${at}
      from unnest(${evIds}::int[], ${evAttempts}::int[], ${evTypes}::text[], ${evData}::jsonb[]) as e(job_id, attempt, type, data)
      returning job_id, seq, type, data, at`.execute(trx);
    const evBy = new Map(evs.rows.map((r) => [Number(r.job_id), toJobEvent(c.codec, r as never)]));
    return jobs.map((job) => ({ job, event: evBy.get(job.id)! }));
  });
}

async function claimSqlite(c: StoreCtx, claims: readonly ClaimRequest[], now: number, at: string): Promise<ClaimedJob[]> {
  return c.db.transaction().execute(async (trx) => {
    const out: ClaimedJob[] = [];
    for (const q of claims) {
      const labels = c.codec.json(q.runner.labels);
      // The same conditional UPDATE as claimJobById (selector ⊆ labels tested in SQL).
      const row = await trx
        .updateTable('jobs')
        .set((eb) => ({ status: 'assigned', runner_id: q.runner.id, assigned_at: now, token_hash: q.tokenHash, holds: q.holds, attempt: eb('attempt', '+', 1) }))
        .where('id', '=', q.jobId)
        .where('status', '=', 'queued')
        .where((eb) => eb.or([eb('pinned_runner_id', 'is', null), eb('pinned_runner_id', '=', q.runner.id)]))
        .where(sql<boolean>`not exists (select 1 from json_each(jobs.selector) as s where s.value is not json_extract(${labels}, '$.' || json_quote(s.key)))`)
        .where(runnerTakesJobs(q.runner.id))
        .returningAll()
        .executeTakeFirst();
      if (!row) continue;
      const job = toJobRow(c.codec, row);
      const data = c.codec.json(q.event.data);
      const ev = await sql<{ job_id: number; seq: number; type: string; data: unknown; at: string }>`
        insert into job_events (job_id, seq, attempt, rseq, type, data, at)
        select ${job.id}, coalesce((select max(seq) from job_events where job_id = ${job.id}), 0) + 1, ${job.attempt}, null, ${q.event.type}, ${data}, ${at}
        returning job_id, seq, type, data, at`.execute(trx);
      out.push({ job, event: toJobEvent(c.codec, ev.rows[0]! as never) });
    }
    return out;
  });
}

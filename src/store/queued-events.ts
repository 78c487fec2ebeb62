import { CompiledQuery, sql } from 'kysely';
import type { EventBody, JobEvent } from '../protocol/index.js';
import { toJobEvent } from './codec.js';
import { assertInt, chunks, type StoreCtx } from './ctx.js';
import { capServerEvent } from './frame-cap.js';
import { PREPARE } from './pg-prepared.js';

/** One event for {@link appendEventsIfQueued}: stored on job `jobId` only while it is `queued`. */
export interface QueuedJobEvent {
  jobId: number;
  event: EventBody;
}

/** PostgreSQL's unique_violation. */
const UNIQUE_VIOLATION = '23505';
/** SQLite rows per statement (3 parameters each: far under its limit). */
const CHUNK = 500;

/**
 * Server-made events (rseq null, the job's current attempt, `at` = `now` as ISO-8601, each cut
 * to the per-event size cap as appendServerEvent does) on many jobs in one transaction, each
 * stored only when its job is `queued` at that moment: the dispatcher's advisory "why it waits"
 * notes (server/dispatch-notes.ts), which must never follow an assignment or a cancel made
 * since it read the queue. Each stored event gets its job's next seq. A job that is not queued,
 * does not exist, or (PostgreSQL) whose row another writer holds at that instant is left out:
 * nothing is stored for it, and no error.
 * - PostgreSQL: ONE statement (prepared): the queued rows locked in job id order with
 *   `FOR UPDATE SKIP LOCKED` (the notes never wait for, nor hold up, a claim or an append of
 *   another replica: a skipped job is noted next round), then the INSERT with each job's
 *   max(seq) + 1. As in claim-batch.ts, that max is read from the statement's snapshot: a
 *   writer that committed an event of one of these jobs after the snapshot but before the lock
 *   makes the insert hit the (job_id, seq) primary key; the statement then rolls back whole and
 *   the batch is redone by {@link appendIfQueuedPgLocked}, which reads seq after its locks.
 * - SQLite (one writer): one INSERT ... SELECT per 500 events (a transaction around them when
 *   there are more).
 * @returns the stored events, in `events` order.
 * @throws Error when a job id appears twice or a number is not an integer (nothing stored).
 */
export async function appendEventsIfQueued(c: StoreCtx, events: readonly QueuedJobEvent[], now: number): Promise<JobEvent[]> {
  assertInt('now', now, 0);
  const seen = new Set<number>();
  for (const e of events) {
    assertInt('jobId', e.jobId, 1);
    if (seen.has(e.jobId)) throw new Error(`store: appendEventsIfQueued: job ${e.jobId} appears twice in one batch`);
    seen.add(e.jobId);
  }
  if (events.length === 0) return [];
  const capped = events.map((e) => ({ jobId: e.jobId, event: capServerEvent(e.event) }));
  const at = new Date(now).toISOString();
  const out = c.dialect === 'postgres' ? await appendPg(c, capped, at) : await appendSqlite(c, capped, at);
  const order = new Map(events.map((e, i) => [e.jobId, i]));
  return out.sort((a, b) => order.get(a.jobId)! - order.get(b.jobId)!);
}

/**
 * The text of the one statement (fixed, parameters as arrays; prepared): $1 job ids, $2 event
 * types, $3 event data (JSON text), $4 `at`. The rows are locked one index lookup per job, in
 * id order (a LATERAL subquery with FOR UPDATE, as claim-batch.ts LOCK_WANTED); the status is
 * re-checked on the newest version of a locked row (READ COMMITTED), so an assignment that
 * committed before the lock is seen.
 */
const APPEND_ONE_STATEMENT = `${PREPARE}
    with want as materialized (
      select * from unnest($1::int[], $2::text[], $3::jsonb[]) as w(job_id, ev_type, ev_data)
      order by job_id
    ), locked as materialized (
      select l.id, l.attempt from want w cross join lateral (
        select j.id, j.attempt from jobs j where j.id = w.job_id and j.status = 'queued'
        for update of j skip locked
      ) l
    ), ev as (
      insert into job_events (job_id, seq, attempt, rseq, type, data, at)
      select l.id, coalesce((select max(x.seq) from job_events x where x.job_id = l.id), 0) + 1, l.attempt, null, w.ev_type, w.ev_data, $4
      from locked l join want w on w.job_id = l.id
      returning job_id, seq, type, data, at
    )
    select job_id, seq, type, data, at from ev`;

type EventRow = { job_id: number; seq: number; type: string; data: unknown; at: string };

async function appendPg(c: StoreCtx, events: readonly QueuedJobEvent[], at: string): Promise<JobEvent[]> {
  const params = [events.map((e) => e.jobId), events.map((e) => e.event.type), events.map((e) => c.codec.json(e.event.data)), at];
  try {
    const r = await c.db.executeQuery<EventRow>(CompiledQuery.raw(APPEND_ONE_STATEMENT, params));
    return r.rows.map((row) => toJobEvent(c.codec, row));
  } catch (err) {
    if ((err as { code?: unknown }).code !== UNIQUE_VIOLATION) throw err;
    return appendIfQueuedPgLocked(c, events, at);
  }
}

/**
 * The batch in one transaction of two statements: lock the still queued rows (skipping rows
 * another writer holds), then insert with seq read after the locks (a new statement's
 * snapshot sees every event committed by an earlier lock holder; later appenders wait for this
 * commit). Exported for its test (queued-events-pg.test.ts): it runs only after a rare
 * unique-key collision of the one statement. Events are capped by the caller.
 */
export async function appendIfQueuedPgLocked(c: StoreCtx, events: readonly QueuedJobEvent[], at: string): Promise<JobEvent[]> {
  const ids = events.map((e) => e.jobId);
  return c.db.transaction().execute(async (trx) => {
    const locked = await sql<{ id: number }>`
      select l.id from unnest(${ids}::int[]) as w(job_id) cross join lateral (
        select j.id from jobs j where j.id = w.job_id and j.status = 'queued'
        for update of j skip locked
      ) l order by l.id`.execute(trx);
    if (locked.rows.length === 0) return [];
    const by = new Map(events.map((e) => [e.jobId, e]));
    const mine = locked.rows.map((r) => by.get(Number(r.id))!);
    const r = await sql<EventRow>`
      insert into job_events (job_id, seq, attempt, rseq, type, data, at)
      select j.id, coalesce((select max(x.seq) from job_events x where x.job_id = j.id), 0) + 1, j.attempt, null, w.ev_type, w.ev_data, ${at}
      from unnest(${mine.map((e) => e.jobId)}::int[], ${mine.map((e) => e.event.type)}::text[], ${mine.map((e) => c.codec.json(e.event.data))}::jsonb[]) as w(job_id, ev_type, ev_data)
      join jobs j on j.id = w.job_id
      returning job_id, seq, type, data, at`.execute(trx);
    return r.rows.map((row) => toJobEvent(c.codec, row));
  });
}

/** SQLite: one INSERT ... SELECT per chunk, conditional on the job's status (one writer: the statement is the whole check). */
async function appendSqlite(c: StoreCtx, events: readonly QueuedJobEvent[], at: string): Promise<JobEvent[]> {
  const parts = chunks(events, CHUNK);
  const run = async (db: StoreCtx['db']): Promise<JobEvent[]> => {
    const out: JobEvent[] = [];
    for (const part of parts) {
      const values = sql.join(part.map((e) => sql`(${e.jobId}, ${e.event.type}, ${c.codec.json(e.event.data)})`));
      const r = await sql<EventRow>`
        with w(job_id, ev_type, ev_data) as (values ${values})
        insert into job_events (job_id, seq, attempt, rseq, type, data, at)
        select j.id, coalesce((select max(x.seq) from job_events x where x.job_id = j.id), 0) + 1, j.attempt, null, w.ev_type, w.ev_data, ${at}
        from w join jobs j on j.id = w.job_id
        where j.status = 'queued'
        returning job_id, seq, type, data, at`.execute(db);
      for (const row of r.rows) out.push(toJobEvent(c.codec, row));
    }
    return out;
  };
  return parts.length === 1 ? run(c.db) : c.db.transaction().execute((trx) => run(trx));
}

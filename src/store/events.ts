import { sql, type Insertable, type Transaction } from 'kysely';
import type { EventBody, JobEvent } from '../protocol/index.js';
import { num, toJobEvent } from './codec.js';
import { assertInt, chunks, lockJob, type StoreCtx } from './ctx.js';
import { capFrameEvent, capServerEvent } from './frame-cap.js';
import type { Database, JobEventsTable } from './schema.js';

/** Rows per multi-row INSERT / IN list (7 columns each: far under both engines' parameter limits). */
const CHUNK = 500;

/** Highest stored seq of the job (0 when none). Call inside the transaction that holds the job lock. */
async function maxSeq(trx: Transaction<Database>, jobId: number): Promise<number> {
  const r = await trx
    .selectFrom('job_events')
    .select((eb) => eb.fn.max('seq').as('m'))
    .where('job_id', '=', jobId)
    .executeTakeFirst();
  return r?.m === null || r?.m === undefined ? 0 : num(r.m);
}

/**
 * What an append needs to know, read in one statement inside the transaction that holds the job
 * lock: the job's highest seq (0: none), the highest rseq stored for (job, attempt) (0: none),
 * and which of `rseqs` are already stored for (job, attempt). Over CHUNK rseqs, the rest are
 * looked up in further statements of CHUNK each. (Also used by runner-frame.ts.)
 */
export async function appendState(trx: Transaction<Database>, jobId: number, attempt: number, rseqs: readonly number[]): Promise<{ maxSeq: number; topRseq: number; seen: number[] }> {
  const [first = [], ...rest] = chunks(rseqs, CHUNK);
  const seenPart = first.length
    ? sql`union all select 1, rseq, null from job_events where job_id = ${jobId} and attempt = ${attempt} and rseq in (${sql.join(first)})`
    : sql``;
  const r = await sql<{ k: number | string; a: number | string | null; b: number | string | null }>`
    select 0 as k, max(seq) as a, max(case when attempt = ${attempt} then rseq end) as b from job_events where job_id = ${jobId}
    ${seenPart}`.execute(trx);
  let maxSeq = 0;
  let topRseq = 0;
  const seen: number[] = [];
  for (const x of r.rows) {
    if (num(x.k) === 0) {
      maxSeq = x.a === null ? 0 : num(x.a);
      topRseq = x.b === null ? 0 : num(x.b);
    } else if (x.a !== null) seen.push(num(x.a));
  }
  for (const part of rest) {
    const more = await trx.selectFrom('job_events').select('rseq').where('job_id', '=', jobId).where('attempt', '=', attempt).where('rseq', 'in', part).execute();
    for (const m of more) if (m.rseq !== null) seen.push(num(m.rseq));
  }
  return { maxSeq, topRseq, seen };
}

/**
 * Stores a runner's events for one attempt, in one transaction that first locks the job row
 * (PostgreSQL `FOR UPDATE`; SQLite has one writer), so concurrent appends to one job get
 * seq 1..n with no gap or duplicate. Refused (`accepted: false`) when the job does not exist
 * or `attempt` is not its current attempt. Events whose rseq is already stored for
 * (job, attempt), or repeated within the batch, are skipped; the rest, in rseq order, get the
 * next seq numbers, each cut to the per-event size cap (frame-cap.ts). `upTo` is the highest rseq stored for (job, attempt) afterwards (0: none).
 * @throws Error when an rseq is not an integer >= 0.
 */
export async function appendRunnerEvents(
  c: StoreCtx,
  jobId: number,
  attempt: number,
  events: ReadonlyArray<EventBody & { rseq: number; at: string }>,
): Promise<{ accepted: false } | { accepted: true; stored: JobEvent[]; upTo: number }> {
  assertInt('attempt', attempt, 0);
  for (const e of events) assertInt('event rseq', e.rseq, 0);
  return c.db.transaction().execute(async (trx) => {
    const job = await lockJob(trx, c.dialect, jobId);
    if (!job || job.attempt !== attempt) return { accepted: false as const };

    const byRseq = new Map<number, EventBody & { rseq: number; at: string }>();
    for (const e of events) if (!byRseq.has(e.rseq)) byRseq.set(e.rseq, capFrameEvent(e));
    const state = await appendState(trx, jobId, attempt, [...byRseq.keys()]);
    for (const r of state.seen) byRseq.delete(r);
    const fresh = [...byRseq.values()].sort((a, b) => a.rseq - b.rseq);

    let seq = state.maxSeq;
    const rows: Insertable<JobEventsTable>[] = fresh.map((e) => ({
      job_id: jobId,
      seq: ++seq,
      attempt,
      rseq: e.rseq,
      type: e.type,
      data: c.codec.json(e.data),
      at: e.at,
    }));
    for (const part of chunks(rows, CHUNK)) await trx.insertInto('job_events').values(part).execute();

    // The highest rseq of (job, attempt) now: the stored one or the highest just inserted.
    const upTo = fresh.reduce((m, e) => Math.max(m, e.rseq), state.topRseq);
    // Return what was stored (after codec sanitising), parsed from the JSON text we wrote.
    const stored = rows.map((r) => toJobEvent(c.codec, { ...r, data: JSON.parse(r.data) as unknown, seq: r.seq }));
    return { accepted: true as const, stored, upTo };
  });
}

/**
 * Stores one server-made event (rseq null, the job's current attempt) with the next seq,
 * `at` = `now` as ISO-8601, cut to the per-event size cap like a runner's (frame-cap.ts: a
 * status message may quote what a runner sent, e.g. its reason for refusing a job).
 * @throws Error when the job does not exist.
 */
export async function appendServerEvent(c: StoreCtx, jobId: number, event: EventBody, now: number): Promise<JobEvent> {
  assertInt('now', now, 0);
  const body = capServerEvent(event);
  return c.db.transaction().execute(async (trx) => {
    const job = await lockJob(trx, c.dialect, jobId);
    if (!job) throw new Error(`store: appendServerEvent: job ${jobId} does not exist`);
    const row = {
      job_id: jobId,
      seq: (await maxSeq(trx, jobId)) + 1,
      attempt: job.attempt,
      rseq: null,
      type: body.type,
      data: c.codec.json(body.data),
      at: new Date(now).toISOString(),
    };
    await trx.insertInto('job_events').values(row).execute();
    return toJobEvent(c.codec, { ...row, data: JSON.parse(row.data) as unknown });
  });
}

/** Events with seq > afterSeq, ascending, at most `limit` (1–10,000). */
export async function listEvents(c: StoreCtx, jobId: number, afterSeq: number, limit: number): Promise<JobEvent[]> {
  assertInt('afterSeq', afterSeq);
  assertInt('limit', limit, 1);
  if (limit > 10_000) throw new Error(`store: limit must be at most 10000, got ${limit}`);
  const rows = await c.db
    .selectFrom('job_events')
    .select(['job_id', 'seq', 'type', 'data', 'at'])
    .where('job_id', '=', jobId)
    .where('seq', '>', afterSeq)
    .orderBy('seq', 'asc')
    .limit(limit)
    .execute();
  return rows.map((r) => toJobEvent(c.codec, r));
}

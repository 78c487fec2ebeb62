import { sql, type Insertable, type Transaction } from 'kysely';
import type { EventBody, JobEvent, JobResult, JobStatus, JobUsage } from '../protocol/index.js';
import { flag, num, numOrNull, toJobEvent, toJobRow, type Codec } from './codec.js';
import { assertInt, chunks, type StoreCtx } from './ctx.js';
import { appendState } from './events.js';
import { transitionPlan } from './jobs.js';
import { endedForFrame, leavesGap, refuses, type AfterFinish, type FrameSql } from './frame-sql.js';
import { capFrameEvent, capFrameMove } from './frame-cap.js';
import { applyFramePg } from './runner-frame-pg.js';
import type { Database, JobEventsTable } from './schema.js';
import type { JobRow } from './types.js';
import { jobUsageMany } from './usage-batch.js';

/** Rows per multi-row INSERT (7 columns each: far under both engines' parameter limits), as events.ts. */
const CHUNK = 500;

/** One uploaded runner event: its body, the runner's number for it (`rseq`, an integer >= 0) and when it happened (ISO-8601). */
export type FrameEvent = EventBody & { rseq: number; at: string };

/**
 * The status change a runner's `job.events` frame asks for (harness started → running; job
 * finished → its end status), applied with the frame's events when they are accepted, as
 * transitionJob would: only from a status in `from` (filtered by core/job-state.ts) and only
 * for the frame's attempt. Times epoch ms.
 */
export interface FrameMove {
  from: readonly JobStatus[];
  to: JobStatus;
  endReason?: string | null;
  error?: string | null;
  sessionId?: string | null;
  result?: JobResult | null;
  /** started_at = this. */
  startedAt?: number;
  /** started_at = this unless the job already has one (a frame that starts and ends the attempt). */
  startedAtIfUnset?: number;
  /**
   * The result to store when the job has children (issue 6: a parent's result lists its
   * children's), given `result`, its direct children (id ascending) and their usage. Called
   * inside the store's transaction: must be pure and synchronous. Without it, or for a job
   * without children, `result` is stored as is (and no child is read).
   */
  withChildren?: (result: JobResult | null, kids: readonly JobRow[], usage: ReadonlyMap<number, JobUsage>) => JobResult | null;
}

/** A runner's `job.events` frame for one attempt of one job, as the hub hands it to {@link applyRunnerFrame}. */
export interface RunnerFrame {
  jobId: number;
  attempt: number;
  /** The runner that sent it: the job must be on this runner. */
  runnerId: number;
  /** In any order; repeats of an rseq are dropped (the first one counts). */
  events: readonly FrameEvent[];
  move?: FrameMove;
}

/** The job as the refusal saw it (null: no such job). */
export type RefusedFrameJob = { runnerId: number | null; status: JobStatus; attempt: number } | null;

/**
 * A frame refused because it would leave rseqs missing: the attempt's events are stored up to
 * `upTo` (0: none) and the frame starts at `first` > upTo + 1.
 */
export interface FrameGap {
  upTo: number;
  first: number;
}

/**
 * What {@link applyRunnerFrame} did. `accepted: false`: nothing was stored (the job does not
 * exist, is on another runner, is lost or queued, or is at another attempt), `job` says which;
 * with `gap` the job is fine but the frame starts past the next rseq (nothing stored, no move).
 * `accepted: true`: `stored` = the events newly stored (seq ascending), `upTo` = the highest
 * rseq stored for (job, attempt) afterwards (0: none; what the runner's ack carries; rseqs
 * 1..upTo are all stored, as a gap is refused), `moved` = the job row after the frame's move, or
 * null when the move did not apply (or none was asked); `afterFinish` (only when some) = events
 * not stored because they follow the attempt's `job.finished` (in this frame, or stored before
 * for a job that has ended).
 */
export type FrameOutcome =
  | { accepted: false; job: RefusedFrameJob; gap?: FrameGap }
  | { accepted: true; stored: JobEvent[]; upTo: number; moved: JobRow | null; afterFinish?: AfterFinish };

/**
 * Stores a runner's events for one attempt and applies the status change they carry, in one
 * transaction — what the hub does with a `job.events` frame (issue 5: one store call per
 * completion instead of a read, an append transaction, a tree read and a transition). Events
 * after the attempt's `job.finished` are not stored (`afterFinish`: in the frame, or stored
 * before for a job that has ended), and a frame that starts past the attempt's highest stored
 * rseq + 1 is refused whole (`gap`), so rseqs 1..upTo are all stored when `upTo` is acked. The job
 * row is locked first (PostgreSQL `FOR UPDATE`; SQLite has one writer), so concurrent appends
 * to one job get seq 1..n with no gap or duplicate. Refused when the job does not exist, is not
 * on `runnerId`, is `lost` or `queued`, or `attempt` is not its current attempt. Events whose
 * rseq is already stored for (job, attempt) are skipped (a resend after a lost ack); the move
 * is applied to the accepted frame even when every event was a repeat (a crash between the
 * store and the ack), and only from a status in `move.from`.
 * - PostgreSQL: one statement (data-modifying CTEs: lock, append, move; one round trip; `pgFast`,
 *   default runner-frame-pg.ts; the store passes runner-frame-pg-batch.ts, which applies the
 *   frames of one event-loop turn in one statement with the same outcome per frame) when
 *   the job has no children to collect; its seqs are read in the statement's snapshot, so an
 *   append committed by another writer while this one waited for the row lock makes the
 *   insert hit the (job_id, seq) or (job_id, attempt, rseq) unique key: the statement is then
 *   rolled back and the frame applied by the transaction below (runner-frame-pg.ts).
 * - Otherwise (that retry; a job with children; SQLite, where sqlite-fast.ts normally runs the
 *   same steps prepared and group-committed, sqlite-frame.ts): one transaction: lock and read
 *   the job, read the append state (events.ts appendState), insert, read the children and
 *   their usage when `move.withChildren` asks, update.
 * @throws Error when a number is not an integer, or `move` is invalid (see transitionPlan).
 */
export async function applyRunnerFrame(c: StoreCtx, f: RunnerFrame, now: number, pgFast: (c: StoreCtx, q: FrameSql) => Promise<FrameOutcome | 'retry'> = applyFramePg): Promise<FrameOutcome> {
  const q = frameSql(c.codec, f, now);
  if (c.dialect === 'postgres') {
    const fast = await pgFast(c, q);
    if (fast !== 'retry') return fast;
  }
  return c.db.transaction().execute((trx) => applyInTransaction(c, trx, q, q.move));
}

/**
 * `f` checked and prepared for the engines' paths: events deduplicated by rseq (the first one
 * counts), rseq ascending, each cut to the per-event size cap (frame-cap.ts); the move's
 * columns (jobs.ts transitionPlan), from the move cut to the same cap.
 * @throws Error when a number is not an integer or the move is invalid.
 */
export function frameSql(codec: Codec, f: RunnerFrame, now: number): FrameSql {
  assertInt('jobId', f.jobId, 1);
  assertInt('attempt', f.attempt, 0);
  assertInt('runnerId', f.runnerId, 1);
  for (const e of f.events) assertInt('event rseq', e.rseq, 0);
  if (f.move?.startedAtIfUnset !== undefined) assertInt('startedAtIfUnset', f.move.startedAtIfUnset, 0);
  // The per-event size cap (frame-cap.ts): what is stored, and what the move writes, is cut here.
  const move = capFrameMove(f.move);
  const plan = move ? transitionPlan(codec, move.from, move.to, now, move) : null;
  const byRseq = new Map<number, FrameEvent>();
  for (const e of f.events) if (!byRseq.has(e.rseq)) byRseq.set(e.rseq, capFrameEvent(e));
  let events = [...byRseq.values()].sort((a, b) => a.rseq - b.rseq);
  // The attempt ends at its job.finished (a paused job's: attempt.ended): what the frame has after it is refused.
  const fin = events.findIndex((e) => e.type === 'job.finished' || e.type === 'attempt.ended');
  const afterFinish = fin >= 0 && fin < events.length - 1 ? { finishedRseq: events[fin]!.rseq, refused: events.length - fin - 1 } : null;
  if (afterFinish) events = events.slice(0, fin + 1);
  return { jobId: f.jobId, attempt: f.attempt, runnerId: f.runnerId, events, afterFinish, plan, startedAtIfUnset: move?.startedAtIfUnset, needKids: move?.withChildren !== undefined, move };
}

async function applyInTransaction(c: StoreCtx, trx: Transaction<Database>, q: FrameSql, move: FrameMove | undefined): Promise<FrameOutcome> {
  let sel = trx
    .selectFrom('jobs')
    .select(['attempt', 'runner_id', 'status', sql<unknown>`exists (select 1 from jobs k where k.parent_id = jobs.id)`.as('has_kids')])
    .where('id', '=', q.jobId);
  if (c.dialect === 'postgres') sel = sel.forUpdate();
  const row = await sel.executeTakeFirst();
  if (!row) return { accepted: false, job: null };
  const job = { runnerId: numOrNull(row.runner_id), status: row.status as JobStatus, attempt: num(row.attempt) };
  if (refuses(job, q)) return { accepted: false, job };

  // An ended job (the fast paths send it here): nothing after its attempt's job.finished is stored.
  let events = q.events;
  let afterFinish = q.afterFinish;
  if (endedForFrame(job.status)) {
    const fin = await trx
      .selectFrom('job_events')
      .select('rseq')
      .where('job_id', '=', q.jobId)
      .where('attempt', '=', q.attempt)
      .where('type', 'in', ['job.finished', 'attempt.ended'])
      .where('rseq', 'is not', null)
      .orderBy('rseq', 'asc')
      .limit(1)
      .executeTakeFirst();
    const finishedRseq = fin?.rseq === null || fin?.rseq === undefined ? null : num(fin.rseq);
    const kept = finishedRseq === null ? events : events.filter((e) => e.rseq <= finishedRseq);
    if (finishedRseq !== null && kept.length < events.length) afterFinish = { finishedRseq, refused: events.length - kept.length + (afterFinish?.refused ?? 0) };
    events = kept;
  }
  const state = await appendState(trx, q.jobId, q.attempt, events.map((e) => e.rseq));
  if (leavesGap({ events }, state.topRseq)) return { accepted: false, job, gap: { upTo: state.topRseq, first: events[0]!.rseq } };
  const seen = new Set(state.seen);
  let seq = state.maxSeq;
  const rows: Insertable<JobEventsTable>[] = events
    .filter((e) => !seen.has(e.rseq))
    .map((e) => ({ job_id: q.jobId, seq: ++seq, attempt: q.attempt, rseq: e.rseq, type: e.type, data: c.codec.json(e.data), at: e.at }));
  for (const part of chunks(rows, CHUNK)) await trx.insertInto('job_events').values(part).execute();
  const upTo = rows.reduce((m, r) => Math.max(m, r.rseq!), state.topRseq);
  const stored = rows.map((r) => toJobEvent(c.codec, { ...r, data: JSON.parse(r.data) as unknown, seq: r.seq }));
  const refused = afterFinish ? { afterFinish } : {};
  if (!q.plan || !move) return { accepted: true, stored, upTo, moved: null, ...refused };

  const set = { ...q.plan.set };
  if (move.withChildren && flag(row.has_kids)) {
    const kids = (await trx.selectFrom('jobs').selectAll().where('parent_id', '=', q.jobId).orderBy('id', 'asc').execute()).map((k) => toJobRow(c.codec, k));
    const usage = await jobUsageMany({ ...c, db: trx }, kids.map((k) => k.id));
    const result = move.withChildren(move.result ?? null, kids, usage);
    set.result = result === null ? null : c.codec.json(result);
  }
  const moved = await trx
    .updateTable('jobs')
    .set({ ...set, ...(q.startedAtIfUnset !== undefined ? { started_at: sql<number>`coalesce(started_at, ${q.startedAtIfUnset})` } : {}) })
    .where('id', '=', q.jobId)
    .where('attempt', '=', q.attempt)
    .where('status', 'in', q.plan.allowed)
    .returningAll()
    .executeTakeFirst();
  return { accepted: true, stored, upTo, moved: moved ? toJobRow(c.codec, moved) : null, ...refused };
}

import { sql, type RawBuilder } from 'kysely';
import { AttemptOutcome, type JobStatus } from '../protocol/index.js';
import { num, toJobRow } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { JobRow } from './types.js';

/**
 * A runner's recent jobs, one line per attempt that ran on it (issue: a job lost on runner A and
 * retried on B showed only on B, as jobs list by their current runner). Read from what the
 * store keeps of every attempt: the server's `status` events (job_events, index
 * `job_events_runner_status`, migration 0022) — the claim's `assigned` one names the runner and
 * its attempt, and the first later status event of that attempt about that runner says how it
 * ended — plus the jobs whose current attempt is on the runner (runner_id).
 */

/** One attempt of a job on a runner. Times epoch ms (server clock). */
export interface RunnerAttemptRow {
  /** The job as it is now (its status, runner and attempt may have moved on). */
  job: JobRow;
  /** The attempt that ran on the runner. */
  attempt: number;
  /** True when it is the job's current attempt and the job is still on the runner. */
  current: boolean;
  /** How it went there (protocol/runner.ts {@link AttemptOutcome}). */
  outcome: AttemptOutcome;
  /** When the runner got it; null when unknown. */
  assignedAt: number | null;
  /** When it ended there: the job's finishedAt for a current attempt, else the time of the status event that ended it; null: not ended (or unknown). */
  endedAt: number | null;
}

/** Statuses that do not end an attempt: its start, and a cancel on its way. */
const UNDERWAY: readonly string[] = ['assigned', 'running', 'cancelling'];

type EventRow = { job_id: unknown; attempt: unknown; seq: unknown; data?: unknown; at: string };

/**
 * The runner's most recent attempts, newest first (job id descending, then attempt
 * descending), at most `limit` (1–100), each with its outcome there (protocol/runner.ts
 * AttemptOutcome; see the module comment).
 * Three reads: the runner's `assigned` events and its current jobs (each at most `limit`,
 * both by index), the jobs of those attempts, and the ending events of the earlier ones.
 * @throws Error when runnerId is not a positive integer or limit is not 1–100.
 */
export async function listRecentAttemptsForRunner(c: StoreCtx, runnerId: number, limit: number): Promise<RunnerAttemptRow[]> {
  assertInt('runnerId', runnerId, 1);
  assertInt('limit', limit, 1);
  if (limit > 100) throw new Error(`store: limit must be at most 100, got ${limit}`);
  const about = aboutRunner(c, runnerId);
  const [assigned, onIt] = await Promise.all([
    sql<EventRow>`select job_id, attempt, seq, at from job_events
      where type = 'status' and rseq is null and ${about} and ${statusOf(c)} = 'assigned'
      order by job_id desc, seq desc limit ${limit}`.execute(c.db),
    c.db.selectFrom('jobs').selectAll().where('runner_id', '=', runnerId).orderBy('id', 'desc').limit(limit).execute(),
  ]);
  const jobs = new Map<number, JobRow>(onIt.map((r) => [num(r.id), toJobRow(c.codec, r)]));
  // (job, attempt) → when and at which seq the runner got it.
  const picked = new Map<string, { jobId: number; attempt: number; seq: number; at: number | null }>();
  for (const r of assigned.rows) {
    const key = `${num(r.job_id)}:${num(r.attempt)}`;
    if (!picked.has(key)) picked.set(key, { jobId: num(r.job_id), attempt: num(r.attempt), seq: num(r.seq), at: time(r.at) });
  }
  for (const j of jobs.values()) {
    const key = `${j.id}:${j.attempt}`;
    if (!picked.has(key)) picked.set(key, { jobId: j.id, attempt: j.attempt, seq: 0, at: j.assignedAt });
  }
  const top = [...picked.values()].sort((a, b) => b.jobId - a.jobId || b.attempt - a.attempt).slice(0, limit);
  const missing = [...new Set(top.map((p) => p.jobId))].filter((id) => !jobs.has(id));
  if (missing.length) {
    for (const r of await c.db.selectFrom('jobs').selectAll().where('id', 'in', missing).execute()) jobs.set(num(r.id), toJobRow(c.codec, r));
  }
  const isCurrent = (p: { jobId: number; attempt: number }) => {
    const j = jobs.get(p.jobId);
    return j !== undefined && j.attempt === p.attempt && j.runnerId === runnerId;
  };
  const earlier = [...new Set(top.filter((p) => jobs.has(p.jobId) && !isCurrent(p)).map((p) => p.jobId))];
  const ends = earlier.length
    ? (
        await sql<EventRow>`select job_id, attempt, seq, data, at from job_events
          where type = 'status' and rseq is null and ${about} and job_id in (${sql.join(earlier)})
          order by job_id, seq`.execute(c.db)
      ).rows
    : [];
  const out: RunnerAttemptRow[] = [];
  for (const p of top) {
    const job = jobs.get(p.jobId);
    if (!job) continue;
    if (isCurrent(p)) {
      out.push({ job, attempt: p.attempt, current: true, outcome: job.status === 'queued' ? 'requeued' : job.status, assignedAt: job.assignedAt ?? p.at, endedAt: job.finishedAt });
      continue;
    }
    const end = ends.find((e) => num(e.job_id) === p.jobId && num(e.attempt) === p.attempt && num(e.seq) > p.seq && !UNDERWAY.includes(statusIn(c, e.data).status));
    const how = end ? statusIn(c, end.data) : null;
    const outcome: AttemptOutcome = how ? endedAs(how) : job.status === 'queued' && job.attempt === p.attempt ? 'requeued' : 'ended';
    out.push({ job, attempt: p.attempt, current: false, outcome, assignedAt: p.at, endedAt: end ? time(end.at) : null });
  }
  return out;
}

/** An earlier attempt's outcome from the status event that ended it there. */
function endedAs(e: { status: string; lostAttempt?: number }): AttemptOutcome {
  if (e.status === 'lost' || e.lostAttempt !== undefined) return 'lost';
  if (e.status === 'queued') return 'requeued';
  const known = AttemptOutcome.safeParse(e.status);
  return known.success ? known.data : 'ended';
}

/** `status` events about runner `id` (`data.runnerId`), as the index's expression reads it. */
function aboutRunner(c: StoreCtx, id: number): RawBuilder<unknown> {
  return c.dialect === 'postgres' ? sql`(data->>'runnerId') = ${String(id)}` : sql`json_extract(data, '$.runnerId') = ${id}`;
}

function statusOf(c: StoreCtx): RawBuilder<unknown> {
  return c.dialect === 'postgres' ? sql`(data->>'status')` : sql`json_extract(data, '$.status')`;
}

function statusIn(c: StoreCtx, data: unknown): { status: JobStatus | string; lostAttempt?: number } {
  const d = c.codec.parse(data) as { status?: unknown; lostAttempt?: unknown } | null;
  return { status: typeof d?.status === 'string' ? d.status : '', ...(typeof d?.lostAttempt === 'number' ? { lostAttempt: d.lostAttempt } : {}) };
}

/** An event's ISO-8601 `at` → epoch ms (null when unreadable). */
function time(at: string): number | null {
  const t = Date.parse(at);
  return Number.isNaN(t) ? null : t;
}

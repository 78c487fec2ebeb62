import type BetterSqlite3 from 'better-sqlite3';
import type { JobEvent, JobStatus } from '../protocol/index.js';
import { flag, num, numOrNull, toJobEvent, toJobRow, type Codec } from './codec.js';
import { endedForFrame, leavesGap, refuses, type FrameSql } from './frame-sql.js';
import type { FrameOutcome } from './runner-frame.js';

/**
 * store.applyRunnerFrame on SQLite without Kysely (its query building was half the CPU of a
 * dispatched job in bench/dispatch, --cpu-prof): the same reads and writes as runner-frame.ts's
 * transaction, as statements prepared once, run synchronously inside `sqlite.transaction` —
 * so a unit of sqlite-group-commit.ts (a SAVEPOINT inside the group's transaction: the frames
 * of one event-loop turn share one commit). Returns 'kysely' (having written nothing) when the
 * move collects children's results and the job has children, or the job has ended (its
 * attempt's stored job.finished is looked up there): runner-frame.ts does those. A frame that
 * would leave an rseq missing is refused (`gap`), nothing written.
 * One writer per data folder (open.ts lock): reading and writing in one transaction is enough
 * for seq 1..n with no gap or duplicate.
 */
export function sqliteFrameApplier(sqlite: BetterSqlite3.Database, codec: Codec): (q: FrameSql) => FrameOutcome | 'kysely' {
  let s: ReturnType<typeof prepare> | null = null;
  const updates = new Map<string, BetterSqlite3.Statement>();
  return sqlite.transaction((q: FrameSql): FrameOutcome | 'kysely' => {
    s ??= prepare(sqlite);
    const row = s.job.get({ jobId: q.jobId, attempt: q.attempt }) as JobState | undefined;
    if (!row) return { accepted: false, job: null };
    const job = { runnerId: numOrNull(row.runner_id), status: row.status as JobStatus, attempt: num(row.attempt) };
    if (refuses(job, q)) return { accepted: false, job };
    if ((q.needKids && flag(row.has_kids)) || endedForFrame(job.status)) return 'kysely';

    let seq = num(row.max_seq);
    let upTo = num(row.top_rseq);
    if (leavesGap(q, upTo)) return { accepted: false, job, gap: { upTo, first: q.events[0]!.rseq } };
    const refused = q.afterFinish ? { afterFinish: q.afterFinish } : {};
    // Repeats of stored rseqs (a resend) are looked up only when one can be: events come
    // rseq ascending, so a first rseq above the attempt's highest stored one means none is.
    const maybeRepeats = q.events.length > 0 && q.events[0]!.rseq <= upTo;
    const seen = new Set(maybeRepeats ? (s.seen.all(q.jobId, q.attempt, JSON.stringify(q.events.map((e) => e.rseq))) as Array<{ rseq: number }>).map((r) => num(r.rseq)) : []);
    const stored: JobEvent[] = [];
    for (const e of q.events) {
      if (seen.has(e.rseq)) continue;
      const data = codec.json(e.data);
      s.insert.run(q.jobId, ++seq, q.attempt, e.rseq, e.type, data, e.at);
      stored.push(toJobEvent(codec, { job_id: q.jobId, seq, type: e.type, data, at: e.at }));
      upTo = Math.max(upTo, e.rseq);
    }
    if (!q.plan) return { accepted: true, stored, upTo, moved: null, ...refused };

    // The move: columns from jobs.ts transitionPlan (fixed names), values bound.
    const cols = Object.keys(q.plan.set);
    const text = `update jobs set ${cols.map((k) => `${k} = ?`).join(', ')}${q.startedAtIfUnset !== undefined ? ', started_at = coalesce(started_at, ?)' : ''} where id = ? and attempt = ? and status in (${q.plan.allowed.map(() => '?').join(', ')}) returning *`;
    let upd = updates.get(text);
    if (!upd) updates.set(text, (upd = sqlite.prepare(text)));
    const values = cols.map((k) => (q.plan!.set as Record<string, unknown>)[k]);
    if (q.startedAtIfUnset !== undefined) values.push(q.startedAtIfUnset);
    const moved = upd.get(...values, q.jobId, q.attempt, ...q.plan.allowed) as Parameters<typeof toJobRow>[1] | undefined;
    return { accepted: true, stored, upTo, moved: moved ? toJobRow(codec, moved) : null, ...refused };
  });
}

type JobState = { attempt: number; runner_id: number | null; status: string; has_kids: number; max_seq: number; top_rseq: number };

/** The fixed statements (after the migrations made the tables). */
function prepare(sqlite: BetterSqlite3.Database) {
  return {
    // The job, whether it has children, its highest seq and the highest rseq of this attempt (0: none).
    job: sqlite.prepare(
      `select j.attempt, j.runner_id, j.status, exists (select 1 from jobs k where k.parent_id = j.id) as has_kids,
        (select coalesce(max(seq), 0) from job_events where job_id = j.id) as max_seq,
        (select coalesce(max(rseq), 0) from job_events where job_id = j.id and attempt = @attempt and rseq is not null) as top_rseq
      from jobs j where j.id = @jobId`,
    ),
    seen: sqlite.prepare('select rseq from job_events where job_id = ? and attempt = ? and rseq in (select value from json_each(?))'),
    insert: sqlite.prepare('insert into job_events (job_id, seq, attempt, rseq, type, data, at) values (?, ?, ?, ?, ?, ?, ?)'),
  };
}

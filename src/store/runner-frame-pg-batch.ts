import { CompiledQuery } from 'kysely';
import type { StoreCtx } from './ctx.js';
import { JOB_ROW_COLUMNS } from './job-columns.js';
import { PREPARE } from './pg-prepared.js';
import type { FrameSql } from './frame-sql.js';
import type { FrameOutcome } from './runner-frame.js';
import { applyFramePg, frameOutcomeOfRow } from './runner-frame-pg.js';

/**
 * PostgreSQL types of the `jobs` columns a frame's move may write (jobs.ts transitionPlan), for
 * the batch statement's per-column arrays. A move writing any other column is not batched.
 */
const SET_TYPES: Readonly<Record<string, string>> = {
  status: 'text',
  end_reason: 'text',
  error: 'text',
  session_id: 'text',
  result: 'jsonb',
  token_hash: 'text',
  runner_id: 'int',
  assigned_at: 'bigint',
  started_at: 'bigint',
  finished_at: 'bigint',
};

/** Most frames in one batch statement (bounds the statement's work while it holds row locks). */
const MAX_BATCH = 256;

type Pending = { q: FrameSql; resolve: (v: FrameOutcome | 'retry') => void; reject: (e: unknown) => void };

/**
 * Group apply of runners' `job.events` frames on PostgreSQL (issue 5 benchmark: with 50 runners
 * completing at once, each frame was its own statement, commit and round trip, and the socket
 * writes to the database were the largest part of the server thread's time, --cpu-prof). The
 * frames handed to the returned function during one turn of the event loop are applied at the
 * next `setImmediate` in one statement per group of frames of the same shape (same move columns,
 * statuses and kind), one commit; frames of different jobs only (a second frame of a job in the
 * same turn goes to the next group).
 * Each frame's outcome is exactly what {@link applyFramePg} would give it alone, because the
 * statement does the same steps per frame: the job rows are locked in id order, `FOR UPDATE
 * NOWAIT` (the batch never waits for a lock while holding others, so it can be in no deadlock:
 * a row locked by another writer fails the statement at once), each frame is checked against its own row,
 * its events get the job's next seqs in rseq order (repeats of a stored rseq skipped), and its
 * move is applied conditionally. A frame of a job with children whose move collects their
 * results, of an ended job, or that would leave an rseq missing is left out: nothing of it is
 * written, it gets 'retry' (as applyFramePg). If the statement fails (a locked row, a
 * unique key hit by a concurrent append, anything), nothing of it was written: each frame of the
 * group is applied alone by applyFramePg, whose own outcomes (or errors) are returned.
 */
export function pgFrameBatcher(c: StoreCtx): (q: FrameSql) => Promise<FrameOutcome | 'retry'> {
  let queue: Pending[] = [];
  let scheduled = false;
  const texts = new Map<string, string>();

  const flush = (): void => {
    scheduled = false;
    const items = queue;
    queue = [];
    // Group by shape; a job's second frame of this turn waits for the next round.
    const groups = new Map<string, Pending[]>();
    const seen = new Set<number>();
    for (const it of items) {
      if (seen.has(it.q.jobId)) {
        queue.push(it);
        continue;
      }
      seen.add(it.q.jobId);
      const key = shapeKey(it.q);
      const g = groups.get(key ?? `single:${it.q.jobId}`) ?? [];
      g.push(it);
      groups.set(key ?? `single:${it.q.jobId}`, g);
    }
    if (queue.length) schedule();
    for (const [key, g] of groups) {
      for (let i = 0; i < g.length; i += MAX_BATCH) void runGroup(key, g.slice(i, i + MAX_BATCH));
    }
  };

  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };

  const alone = (it: Pending): void => {
    applyFramePg(c, it.q).then(it.resolve, it.reject);
  };

  const runGroup = async (key: string, g: Pending[]): Promise<void> => {
    if (g.length === 1 || key.startsWith('single:')) {
      for (const it of g) alone(it);
      return;
    }
    const qs = g.map((it) => it.q);
    let datas: string[][];
    try {
      datas = qs.map((q) => q.events.map((e) => c.codec.json(e.data)));
    } catch {
      for (const it of g) alone(it); // nothing written: each frame gets its own error
      return;
    }
    let rows: Record<string, unknown>[];
    try {
      rows = await runBatch(c, texts, key, qs, datas);
    } catch {
      // Rolled back whole (a row locked by another writer: NOWAIT; a unique key; anything):
      // each frame alone, with its own retry and errors.
      for (const it of g) alone(it);
      return;
    }
    // Committed: each caller gets its outcome (or the error reading it), never a second apply.
    g.forEach((it, i) => {
      try {
        const row = rows[i];
        if (!row) throw new Error(`store: frame batch: ${rows.length} rows for ${g.length} frames`);
        it.resolve(frameOutcomeOfRow(c, it.q, datas[i]!, row));
      } catch (err) {
        it.reject(err);
      }
    });
  };

  return (q) =>
    new Promise((resolve, reject) => {
      queue.push({ q, resolve, reject });
      schedule();
    });
}

/** The batch shape of `q` (frames of one shape share a statement text), or null when it is not batched. */
function shapeKey(q: FrameSql): string | null {
  if (!q.plan) return `n:${q.needKids}`;
  const cols = Object.keys(q.plan.set);
  if (cols.some((k) => SET_TYPES[k] === undefined)) return null;
  return `m:${q.needKids}:${q.startedAtIfUnset !== undefined}:${q.plan.allowed.join(',')}:${cols.join(',')}`;
}

/** The statement for frames of shape `key` (see {@link pgFrameBatcher}); parameters in {@link applyBatch}'s order. */
function statementText(first: FrameSql): string {
  const cols = first.plan ? Object.keys(first.plan.set) : [];
  const ifUnset = first.startedAtIfUnset !== undefined;
  // $1 jobs, $2 attempts, $3 runners, $4 need kids, $5..$9 events, $10 allowed, then the set columns, then started_at if unset.
  const colArgs = cols.map((k, i) => `$${11 + i}::${SET_TYPES[k]}[]`);
  const unsetArg = `$${11 + cols.length}::bigint[]`;
  const frCols = ['job_id', 'attempt', 'runner_id', ...cols.map((_, i) => `v${i}`), ...(ifUnset ? ['v_unset'] : [])];
  const upd = first.plan
    ? `, upd as (
        update jobs set ${[...cols.map((k, i) => `${k} = fr.v${i}`), ...(ifUnset ? ['started_at = coalesce(jobs.started_at, fr.v_unset)'] : [])].join(', ')}
        from fr
        where jobs.id = fr.job_id and jobs.attempt = fr.attempt and jobs.status = any($10::text[]) and exists (select 1 from g where g.job_id = fr.job_id)
        returning ${JOB_ROW_COLUMNS.map((k) => `jobs.${k}`).join(', ')}
      )`
    : '';
  return `${PREPARE}
    with fr as materialized (
      select * from unnest($1::int[], $2::int[], $3::int[]${colArgs.map((a) => `, ${a}`).join('')}${ifUnset ? `, ${unsetArg}` : ''}) with ordinality as f(${frCols.join(', ')}, k)
    ), j as materialized (
      select id, attempt, runner_id, status, $4::boolean and exists (select 1 from jobs k where k.parent_id = jobs.id) as has_kids
      from jobs where id = any($1::int[])
      order by id
      for update nowait
    ), ok as materialized (
      select fr.job_id, fr.attempt from fr join j on j.id = fr.job_id
      where j.attempt = fr.attempt and j.runner_id = fr.runner_id and j.status not in ('lost', 'queued', 'succeeded', 'failed', 'cancelled') and not j.has_kids
        and $10::text[] is not null
    ), s as materialized (
      select ok.job_id,
        coalesce((select max(x.seq) from job_events x where x.job_id = ok.job_id), 0) as max_seq,
        coalesce((select max(x.rseq) from job_events x where x.job_id = ok.job_id and x.attempt = ok.attempt), 0) as top_rseq
      from ok
    ), g as materialized (
      select s.job_id from s
      where (select min(e.rseq) from unnest($5::int[], $6::int[]) as e(job_id, rseq) where e.job_id = s.job_id) <= s.top_rseq + 1
    ), ev as materialized (
      select e.job_id, ok.attempt, e.rseq, e.type, e.data, e.at, row_number() over (partition by e.job_id order by e.rseq) as n
      from unnest($5::int[], $6::int[], $7::text[], $8::jsonb[], $9::text[]) as e(job_id, rseq, type, data, at)
      join ok on ok.job_id = e.job_id
      where exists (select 1 from g where g.job_id = e.job_id)
        and not exists (select 1 from job_events x where x.job_id = e.job_id and x.attempt = ok.attempt and x.rseq = e.rseq)
    ), ins as (
      insert into job_events (job_id, seq, attempt, rseq, type, data, at)
      select ev.job_id, s.max_seq + ev.n, ev.attempt, ev.rseq, ev.type, ev.data, ev.at from ev join s on s.job_id = ev.job_id
      returning job_id, rseq
    )${upd}
    select fr.k as f_k, j.attempt as f_attempt, j.runner_id as f_runner_id, j.status as f_status, j.has_kids as f_has_kids,
      s.top_rseq as f_top_rseq, s.max_seq as f_max_seq, (select array_agg(ins.rseq) from ins where ins.job_id = fr.job_id) as f_inserted
      ${first.plan ? ', u.*' : ''}
    from fr left join j on j.id = fr.job_id left join s on s.job_id = fr.job_id ${first.plan ? 'left join upd u on u.id = fr.job_id' : ''}
    order by fr.k`;
}

/**
 * Runs frames `qs` (distinct jobs, one shape; `datas` their events' data as JSON text) as one
 * statement; its rows in `qs` order.
 * @throws Error from the driver (nothing of the statement was written).
 */
async function runBatch(c: StoreCtx, texts: Map<string, string>, key: string, qs: readonly FrameSql[], datas: readonly string[][]): Promise<Record<string, unknown>[]> {
  const first = qs[0]!;
  let text = texts.get(key);
  if (!text) texts.set(key, (text = statementText(first)));
  const cols = first.plan ? Object.keys(first.plan.set) : [];
  const params: unknown[] = [
    qs.map((q) => q.jobId),
    qs.map((q) => q.attempt),
    qs.map((q) => q.runnerId),
    first.needKids,
    qs.flatMap((q) => q.events.map(() => q.jobId)),
    qs.flatMap((q) => q.events.map((e) => e.rseq)),
    qs.flatMap((q) => q.events.map((e) => e.type)),
    datas.flat(),
    qs.flatMap((q) => q.events.map((e) => e.at)),
    first.plan ? first.plan.allowed : [],
    ...cols.map((k) => qs.map((q) => (q.plan!.set as Record<string, unknown>)[k] ?? null)),
    ...(first.startedAtIfUnset !== undefined ? [qs.map((q) => q.startedAtIfUnset)] : []),
  ];
  const r = await c.db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, params));
  return r.rows;
}


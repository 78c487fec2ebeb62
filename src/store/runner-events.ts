import { num, numOrNull, storable } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import { RUNNER_EVENT_KINDS, type RunnerEventKind, type RunnerEventRow } from './dashboard-types.js';

/** A runner's history (issue 8, migration 0016 `runner_events`). */

const MAX_TEXT = 1_000;

/** @throws Error naming the field when the kind is unknown, the text empty or `now` malformed. */
export async function recordRunnerEvent(c: StoreCtx, runnerId: number, e: { kind: RunnerEventKind; text: string; jobId?: number | null }, now: number): Promise<RunnerEventRow> {
  assertInt('runnerId', runnerId, 1);
  assertInt('now', now, 0);
  if (!(RUNNER_EVENT_KINDS as readonly string[]).includes(e.kind)) throw new Error(`store: runner event kind must be one of ${RUNNER_EVENT_KINDS.join(', ')}, got ${JSON.stringify(e.kind)}`);
  if (typeof e.text !== 'string' || e.text.trim() === '') throw new Error('store: runner event text must be a non-empty string');
  const jobId = e.jobId ?? null;
  if (jobId !== null) assertInt('jobId', jobId, 1);
  const text = storable(e.text.slice(0, MAX_TEXT));
  const row = await c.db.insertInto('runner_events').values({ runner_id: runnerId, kind: e.kind, text, job_id: jobId, at: now }).returning('id').executeTakeFirstOrThrow();
  return { id: num(row.id), runnerId, kind: e.kind, text, jobId, at: now };
}

/** Newest first, at most `limit` (1..500); `before` an id cursor. */
export async function listRunnerEvents(c: StoreCtx, runnerId: number, limit: number, before?: number): Promise<RunnerEventRow[]> {
  assertInt('limit', limit, 1);
  if (limit > 500) throw new Error(`store: limit must be at most 500, got ${limit}`);
  let q = c.db.selectFrom('runner_events').selectAll().where('runner_id', '=', runnerId);
  if (before !== undefined) {
    assertInt('before', before, 1);
    q = q.where('id', '<', before);
  }
  const rows = await q.orderBy('id', 'desc').limit(limit).execute();
  return rows.map((r) => ({ id: num(r.id), runnerId: num(r.runner_id), kind: r.kind as RunnerEventKind, text: r.text, jobId: numOrNull(r.job_id), at: num(r.at) }));
}

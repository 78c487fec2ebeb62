import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import { num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { CostGroup, CostRollupRow } from './types.js';

const DAY_MS = 86_400_000;

/**
 * Sums of the gateway's ledger (model_calls) grouped by `by`, for calls started in
 * [since, until) (epoch ms). Keys: `job` and `tree` → the job / root job id; `agent` → the
 * agent name; `runner` → the runner id at call time (`none` when the job had none); `day` →
 * the UTC date `YYYY-MM-DD`; `task` → the task whose turn the call's tree is (0016
 * `task_turns`, by its root job; `none` for trees that are no task's turn). Rows are ordered
 * by cost descending, then key; days newest first. `costNanos` is left out of a row whose sum
 * is past Number.MAX_SAFE_INTEGER ({@link exactCount}). One query.
 * @throws Error when since/until are not integers or `by` is unknown.
 */
export async function costRollup(c: StoreCtx, q: { by: CostGroup; since: number; until?: number; rootId?: number }): Promise<CostRollupRow[]> {
  assertInt('since', q.since, 0);
  if (q.until !== undefined) assertInt('until', q.until, 0);
  if (q.rootId !== undefined) assertInt('rootId', q.rootId, 1);
  const keyExpr: RawBuilder<unknown> = (() => {
    switch (q.by) {
      case 'job':
        return sql`mc.job_id`;
      case 'tree':
        return sql`j.root_id`;
      case 'agent':
        return sql`j.agent`;
      case 'runner':
        return sql`mc.runner_id`;
      case 'day':
        return sql`(mc.started_at / ${sql.lit(DAY_MS)})`;
      case 'task':
        return sql`tt.task_id`;
      default:
        throw new Error(`store: costRollup: by must be job, tree, agent, runner, day or task, got ${JSON.stringify(q.by)}`);
    }
  })();
  const calls = c.db.selectFrom('model_calls as mc').innerJoin('jobs as j', 'j.id', 'mc.job_id');
  // A tree is at most one task's turn (task_turns: one row per turn, a job attached once).
  const from = q.by === 'task' ? (calls.leftJoin('task_turns as tt', 'tt.job_id', 'j.root_id') as unknown as typeof calls) : calls;
  const rows = await from
    .select((eb) => [
      keyExpr.as('k'),
      eb.fn.countAll().as('calls'),
      sql<number>`coalesce(sum(case when mc.refused is not null then 1 else 0 end), 0)`.as('refused'),
      sql<number>`coalesce(sum(case when mc.usage_known = 0 then 1 else 0 end), 0)`.as('estimated'),
      eb.fn.coalesce(eb.fn.sum('mc.input_tokens'), sql.lit(0)).as('input'),
      eb.fn.coalesce(eb.fn.sum('mc.output_tokens'), sql.lit(0)).as('output'),
      eb.fn.coalesce(eb.fn.sum('mc.cache_read_tokens'), sql.lit(0)).as('cacheRead'),
      eb.fn.coalesce(eb.fn.sum('mc.cache_write_tokens'), sql.lit(0)).as('cacheWrite'),
      eb.fn.coalesce(eb.fn.sum('mc.cost_micros'), sql.lit(0)).as('cost'),
      eb.fn.coalesce(eb.fn.sum('mc.cost_nanos'), sql.lit(0)).as('nanos'),
    ])
    .where((eb) => {
      const conds: Expression<SqlBool>[] = [eb('mc.started_at', '>=', q.since)];
      if (q.until !== undefined) conds.push(eb('mc.started_at', '<', q.until));
      if (q.rootId !== undefined) conds.push(eb('j.root_id', '=', q.rootId));
      return eb.and(conds);
    })
    .groupBy(keyExpr as never)
    .execute();
  const out = (rows as unknown as Record<string, unknown>[]).map((r): CostRollupRow => {
    const k = r.k;
    let key: string;
    if (q.by === 'day') key = new Date(num(k) * DAY_MS).toISOString().slice(0, 10);
    else if (k === null || k === undefined) key = 'none';
    else key = String(k);
    const row: CostRollupRow = {
      key,
      calls: num(r.calls),
      refusedCalls: num(r.refused),
      estimatedCalls: num(r.estimated),
      inputTokens: num(r.input),
      outputTokens: num(r.output),
      cacheReadTokens: num(r.cacheRead),
      cacheWriteTokens: num(r.cacheWrite),
      costMicros: num(r.cost),
    };
    const nanos = exactCount(r.nanos);
    if (nanos !== null) row.costNanos = nanos;
    return row;
  });
  // days newest first, in date order (by cost they read 12-06, 12-04, 12-05: fresh-tester finding)
  if (q.by === 'day') return out.sort((a, b) => byKey(b.key, a.key));
  // ties by key, numerically when both are ids (job 2 before job 10, not "10" before "2": fresh-tester finding)
  return out.sort((a, b) => b.costMicros - a.costMicros || byKey(a.key, b.key));
}

/**
 * A sum the driver returned (a number from SQLite; a numeric's text, or a bigint, from
 * PostgreSQL) as a number when it is one exactly, else null: past Number.MAX_SAFE_INTEGER a JS
 * number rounds (a nano-dollar sum past ~$9.007M came back 1 n$ off, and a schema refusing it
 * broke every rollup over such a window: fresh-tester finding).
 */
function exactCount(v: unknown): number | null {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : null;
  const big = typeof v === 'bigint' ? v : /^\d+$/.test(String(v)) ? BigInt(String(v)) : null;
  return big !== null && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : null;
}

/** Keys in order: two whole numbers (ids) by value, else as text. */
function byKey(a: string, b: string): number {
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) return Number(a) - Number(b);
  return a < b ? -1 : a > b ? 1 : 0;
}

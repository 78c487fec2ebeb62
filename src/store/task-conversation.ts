import { num, numOrNull } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { TaskTurnRow } from './dashboard-types.js';
import type { TaskEventRow, TaskPromptRow } from './tasks-types.js';
import { toTaskEventRow } from './tasks-turns.js';

/** What a task's conversation view reads (issue 8, migration 0016 `task_turns`): turns, their jobs, what woke them. */

/** Newest first, at most `limit` (1..200); `beforeTurn`: only turns below it. */
export async function listTaskTurns(c: StoreCtx, taskId: number, limit: number, beforeTurn?: number): Promise<TaskTurnRow[]> {
  assertInt('taskId', taskId, 1);
  assertInt('limit', limit, 1);
  if (limit > 200) throw new Error(`store: limit must be at most 200, got ${limit}`);
  let q = c.db.selectFrom('task_turns').selectAll().where('task_id', '=', taskId);
  if (beforeTurn !== undefined) {
    assertInt('beforeTurn', beforeTurn, 1);
    q = q.where('turn', '<', beforeTurn);
  }
  const rows = await q.orderBy('turn', 'desc').limit(limit).execute();
  return rows.map((r) => ({ taskId: num(r.task_id), turn: num(r.turn), jobId: num(r.job_id), createdAt: num(r.created_at) }));
}

/** Prompts and events of turns fromTurn..toTurn (toTurn null: no bound), plus the pending ones with `pending`; id order, ≤ 1,000 each. */
export async function listTaskInputs(c: StoreCtx, taskId: number, q: { fromTurn: number; toTurn: number | null; pending: boolean }): Promise<{ prompts: TaskPromptRow[]; events: TaskEventRow[] }> {
  assertInt('taskId', taskId, 1);
  assertInt('fromTurn', q.fromTurn, 0);
  if (q.toTurn !== null) assertInt('toTurn', q.toTurn, 0);
  const { fromTurn, toTurn, pending } = q;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- one filter for two tables with the same `turn` column
  const inTurns = (eb: any) => {
    const ranged = toTurn === null ? eb('turn', '>=', fromTurn) : eb.and([eb('turn', '>=', fromTurn), eb('turn', '<=', toTurn)]);
    return pending ? eb.or([ranged, eb('turn', 'is', null)]) : ranged;
  };
  const [prompts, events] = await Promise.all([
    c.db.selectFrom('task_prompts').selectAll().where('task_id', '=', taskId).where(inTurns).orderBy('id').limit(1000).execute(),
    c.db.selectFrom('task_events').selectAll().where('task_id', '=', taskId).where(inTurns).orderBy('id').limit(1000).execute(),
  ]);
  return {
    prompts: prompts.map((p) => ({ id: num(p.id), taskId: num(p.task_id), text: p.text, turn: numOrNull(p.turn), createdAt: num(p.created_at) })),
    events: events.map(toTaskEventRow),
  };
}

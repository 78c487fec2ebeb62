import { sql, type Selectable } from 'kysely';
import type { JobStatus } from '../protocol/index.js';
import { num, numOrNull, storable } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { TaskEventsTable } from './tasks-schema.js';
import type { NewTaskEvent, TaskEventRow, TaskPromptRow, TurnClaim } from './tasks-types.js';
import { readTask } from './tasks.js';
import { noteTurnJob } from './task-turn-jobs.js';

/** Queued prompts, pending events, turns and coalescing of tasks (issue 7). */

export function toTaskEventRow(r: Selectable<TaskEventsTable>): TaskEventRow {
  return {
    id: num(r.id),
    taskId: numOrNull(r.task_id),
    receiverId: numOrNull(r.receiver_id),
    key: r.key,
    kind: r.kind,
    actor: r.actor,
    summary: r.summary,
    occurredAt: num(r.occurred_at),
    receivedAt: num(r.received_at),
    turn: numOrNull(r.turn),
  };
}

/** @throws Error naming the field when an event is malformed. */
export function checkEvent(e: NewTaskEvent): void {
  if (typeof e.kind !== 'string' || e.kind.length === 0 || e.kind.length > 200) throw new Error('store: event kind must be a string of 1 to 200 characters');
  if (typeof e.summary !== 'string') throw new Error('store: event summary must be a string');
  assertInt('occurredAt', e.occurredAt, 0);
}

/** Row values of a task event (text made storable, summary capped at 100,000 characters). */
export function eventValues(taskId: number | null, e: NewTaskEvent, now: number) {
  return {
    task_id: taskId,
    receiver_id: e.receiverId,
    key: e.key,
    kind: e.kind,
    actor: e.actor === null ? null : storable(e.actor),
    summary: storable(e.summary.slice(0, 100_000)),
    occurred_at: e.occurredAt,
    received_at: now,
    turn: null,
  };
}

export async function enqueueTaskPrompt(c: StoreCtx, taskId: number, text: string, now: number): Promise<TaskPromptRow> {
  assertInt('taskId', taskId, 1);
  assertInt('now', now, 0);
  if (typeof text !== 'string' || text.length === 0) throw new Error('store: prompt must be a non-empty string');
  const row = await c.db
    .insertInto('task_prompts')
    .values({ task_id: taskId, text: storable(text), turn: null, created_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { id: num(row.id), taskId: num(row.task_id), text: row.text, turn: numOrNull(row.turn), createdAt: num(row.created_at) };
}

export async function addTaskEvent(c: StoreCtx, taskId: number | null, e: NewTaskEvent, now: number): Promise<TaskEventRow> {
  checkEvent(e);
  assertInt('now', now, 0);
  if (taskId === null) return toTaskEventRow(await c.db.insertInto('task_events').values(eventValues(null, e, now)).returningAll().executeTakeFirstOrThrow());
  // The event and its task's pending counter (0017) in one transaction.
  return c.db.transaction().execute(async (trx) => {
    const row = await trx.insertInto('task_events').values(eventValues(taskId, e, now)).returningAll().executeTakeFirstOrThrow();
    await trx
      .updateTable('tasks')
      .set({ pending_events: sql<number>`pending_events + 1` })
      .where('id', '=', taskId)
      .execute();
    return toTaskEventRow(row);
  });
}

export async function listTaskEvents(c: StoreCtx, taskId: number | null, limit: number): Promise<TaskEventRow[]> {
  assertInt('limit', limit, 1);
  const q = c.db.selectFrom('task_events').selectAll().orderBy('id', 'desc').limit(Math.min(limit, 1000));
  const rows = await (taskId === null ? q.where('task_id', 'is', null) : q.where('task_id', '=', taskId)).execute();
  return rows.map(toTaskEventRow);
}

export async function claimTaskTurn(c: StoreCtx, taskId: number, now: number): Promise<TurnClaim | null> {
  assertInt('now', now, 0);
  return c.db.transaction().execute(async (trx) => {
    let q = trx.selectFrom('tasks').select(['status', 'current_job_id', 'turn']).where('id', '=', taskId);
    if (c.dialect === 'postgres') q = q.forUpdate();
    const t = await q.executeTakeFirst();
    if (!t || t.status !== 'idle' || t.current_job_id !== null) return null;
    const prompts = await trx.selectFrom('task_prompts').selectAll().where('task_id', '=', taskId).where('turn', 'is', null).orderBy('id').execute();
    const events = await trx.selectFrom('task_events').selectAll().where('task_id', '=', taskId).where('turn', 'is', null).orderBy('id').execute();
    if (prompts.length === 0 && events.length === 0) return null;
    const turn = num(t.turn) + 1;
    const r = await trx
      .updateTable('tasks')
      // The events taken leave the pending counter (0017); read under the task's lock, so none was counted twice.
      .set({ status: 'running', turn, trailing_due_at: null, error: null, updated_at: now, pending_events: sql<number>`pending_events - ${events.length}` })
      .where('id', '=', taskId)
      .where('status', '=', 'idle')
      .where('turn', '=', turn - 1)
      .executeTakeFirst();
    if (num(r.numUpdatedRows) === 0) return null;
    if (prompts.length) await trx.updateTable('task_prompts').set({ turn }).where('id', 'in', prompts.map((p) => num(p.id))).execute();
    if (events.length) await trx.updateTable('task_events').set({ turn }).where('id', 'in', events.map((e) => num(e.id))).execute();
    const task = (await readTask(c, trx, taskId))!;
    return {
      task,
      turn,
      events: events.map((e) => ({ ...toTaskEventRow(e), turn })),
      prompts: prompts.map((p) => ({ id: num(p.id), taskId, text: p.text, turn, createdAt: num(p.created_at) })),
    };
  });
}

export async function attachTurnJob(c: StoreCtx, taskId: number, turn: number, jobId: number, now: number): Promise<boolean> {
  assertInt('jobId', jobId, 1);
  return c.db.transaction().execute(async (trx) => {
    const r = await trx
      .updateTable('tasks')
      .set({ current_job_id: jobId, updated_at: now })
      .where('id', '=', taskId)
      .where('turn', '=', turn)
      .where('status', '=', 'running')
      .executeTakeFirst();
    if (num(r.numUpdatedRows) === 0) return false;
    // The turn's job, kept for the conversation view (0016; the task row holds only the current one).
    await noteTurnJob(trx, taskId, turn, jobId, now);
    return true;
  });
}

export async function abandonTaskTurn(c: StoreCtx, taskId: number, turn: number, now: number): Promise<void> {
  await c.db.transaction().execute(async (trx) => {
    await trx.updateTable('task_prompts').set({ turn: null }).where('task_id', '=', taskId).where('turn', '=', turn).execute();
    const back = await trx.updateTable('task_events').set({ turn: null }).where('task_id', '=', taskId).where('turn', '=', turn).executeTakeFirst();
    // Pending again: back on the counter (0017), whatever the status update below finds.
    const n = num(back.numUpdatedRows);
    if (n > 0)
      await trx
        .updateTable('tasks')
        .set({ pending_events: sql<number>`pending_events + ${n}` })
        .where('id', '=', taskId)
        .execute();
    await trx
      .updateTable('tasks')
      .set({ status: 'idle', current_job_id: null, turn: turn - 1, updated_at: now })
      .where('id', '=', taskId)
      .where('turn', '=', turn)
      .where('status', '=', 'running')
      .execute();
  });
}

export async function listTaskTurnJobs(c: StoreCtx): Promise<{ taskId: number; jobId: number; jobStatus: JobStatus | null }[]> {
  const rows = await c.db
    .selectFrom('tasks')
    .leftJoin('jobs', 'jobs.id', 'tasks.current_job_id')
    .select(['tasks.id', 'tasks.current_job_id', 'jobs.status'])
    .where('tasks.current_job_id', 'is not', null)
    .orderBy('tasks.id')
    .execute();
  return rows.map((r) => ({ taskId: num(r.id), jobId: num(r.current_job_id), jobStatus: (r.status ?? null) as JobStatus | null }));
}

export async function noteTaskEvent(c: StoreCtx, taskId: number, now: number): Promise<{ decision: 'wake' } | { decision: 'coalesced'; trailingDueAt: number } | null> {
  assertInt('now', now, 0);
  const opened = await c.db
    .updateTable('tasks')
    .set({ window_until: sql<number>`${now} + coalesce_ms`, updated_at: now })
    .where('id', '=', taskId)
    .where((eb) => eb.or([eb('window_until', 'is', null), eb('window_until', '<=', now)]))
    .executeTakeFirst();
  if (num(opened.numUpdatedRows) > 0) return { decision: 'wake' };
  await c.db
    .updateTable('tasks')
    .set({ trailing_due_at: sql<number>`window_until` })
    .where('id', '=', taskId)
    .where('trailing_due_at', 'is', null)
    .where('window_until', '>', now)
    .execute();
  const row = await c.db.selectFrom('tasks').select(['trailing_due_at', 'window_until']).where('id', '=', taskId).executeTakeFirst();
  if (!row) return null;
  return { decision: 'coalesced', trailingDueAt: num(row.trailing_due_at ?? row.window_until) };
}

export async function listTrailingWakes(c: StoreCtx): Promise<{ taskId: number; dueAt: number }[]> {
  const rows = await c.db.selectFrom('tasks').select(['id', 'trailing_due_at']).where('trailing_due_at', 'is not', null).orderBy('trailing_due_at').execute();
  return rows.map((r) => ({ taskId: num(r.id), dueAt: num(r.trailing_due_at) }));
}

export async function claimTrailingWake(c: StoreCtx, taskId: number, dueAt: number, now: number): Promise<boolean> {
  assertInt('dueAt', dueAt, 0);
  assertInt('now', now, 0);
  if (dueAt > now) return false;
  const r = await c.db
    .updateTable('tasks')
    .set({ trailing_due_at: null, window_until: sql<number>`${now} + coalesce_ms`, updated_at: now })
    .where('id', '=', taskId)
    .where('trailing_due_at', '=', dueAt)
    .executeTakeFirst();
  return num(r.numUpdatedRows) > 0;
}

import { sql, type Selectable, type Transaction } from 'kysely';
import { TaskStatus as TaskStatusSchema, type JobStatus, type TaskStatus } from '../protocol/index.js';
import { num, numOrNull } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { Database } from './schema.js';
import type { TasksTable } from './tasks-schema.js';
import type { NewTask, TaskRow, TaskSlot, TaskUpdate } from './tasks-types.js';

type Db = StoreCtx['db'] | Transaction<Database>;

/** Longest coalescing window, ms (one day, issue 7). */
export const MAX_COALESCE_MS = 86_400_000;

/**
 * `tasks` rows with their pending prompt count (a correlated subquery: one query) and pending
 * event count (the stored counter `pending_events`, 0017: a count of those rows grew with the
 * coalescing backlog); what their turns' job trees spent and hold reserved (0026: summed over
 * `task_turns` → `tree_budgets`, µ$), the current turn's job status, and how many jobs of the
 * current turn's tree are paused for budget.
 */
export function selectTasks(db: Db) {
  return db
    .selectFrom('tasks')
    .selectAll('tasks')
    .select((eb) => [
      eb.selectFrom('task_prompts').select((e) => e.fn.countAll().as('n')).whereRef('task_prompts.task_id', '=', 'tasks.id').where('task_prompts.turn', 'is', null).as('queued_prompts'),
      eb
        .selectFrom('task_turns')
        .innerJoin('tree_budgets', 'tree_budgets.root_id', 'task_turns.job_id')
        .select(sql<string>`coalesce(sum(tree_budgets.spent_micros), 0)`.as('s'))
        .whereRef('task_turns.task_id', '=', 'tasks.id')
        .as('spent_micros'),
      eb
        .selectFrom('task_turns')
        .innerJoin('tree_budgets', 'tree_budgets.root_id', 'task_turns.job_id')
        .select(sql<string>`coalesce(sum(tree_budgets.reserved_micros), 0)`.as('r'))
        .whereRef('task_turns.task_id', '=', 'tasks.id')
        .as('reserved_micros'),
      eb.selectFrom('jobs').select('jobs.status').whereRef('jobs.id', '=', 'tasks.current_job_id').as('turn_job_status'),
      // the current turn's tree (rooted at its job) paused for budget: its own job or a child
      eb
        .selectFrom('jobs as pj')
        .select((e) => e.fn.countAll().as('n'))
        .whereRef('pj.root_id', '=', 'tasks.current_job_id')
        .where('pj.status', '=', 'paused')
        .where('pj.end_reason', '=', 'budget')
        .as('turn_paused_jobs'),
    ]);
}

/** A row of {@link selectTasks} (the summed and joined columns absent where a caller read `tasks` alone: 0 and null then). */
export type TaskSelect = Selectable<TasksTable> & { queued_prompts: unknown; pending_events: unknown; spent_micros?: unknown; reserved_micros?: unknown; turn_job_status?: unknown; turn_paused_jobs?: unknown };

/** Task rows (from {@link selectTasks}) with their active keys: one more query for many tasks. */
export async function toTaskRows(c: StoreCtx, db: Db, rows: TaskSelect[]): Promise<TaskRow[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => num(r.id));
  const keys = await db.selectFrom('task_keys').select(['task_id', 'key']).where('task_id', 'in', ids).where('active', '=', 1).orderBy('key').execute();
  return rows.map((r) => {
    const id = num(r.id);
    return taskRowOf(c, r, keys.filter((k) => num(k.task_id) === id).map((k) => k.key));
  });
}

/** A {@link TaskSelect} row (as the driver returned it) with its active `keys` (sorted) → TaskRow. */
export function taskRowOf(c: StoreCtx, r: TaskSelect, keys: string[]): TaskRow {
  return {
    id: num(r.id),
    agent: r.agent,
    title: r.title,
    input: c.codec.parse(r.input) as Record<string, unknown>,
    status: r.status as TaskStatus,
    keys,
    coalesceMs: num(r.coalesce_ms),
    currentJobId: numOrNull(r.current_job_id),
    workspaceJobId: numOrNull(r.workspace_job_id),
    runnerId: numOrNull(r.runner_id),
    sessionId: r.session_id,
    turn: num(r.turn),
    windowUntil: numOrNull(r.window_until),
    trailingDueAt: numOrNull(r.trailing_due_at),
    lastEventAt: numOrNull(r.last_event_at),
    slotUntil: numOrNull(r.slot_until ?? null),
    error: r.error,
    queuedPrompts: num(r.queued_prompts ?? 0),
    pendingEvents: num(r.pending_events ?? 0),
    budgetMicros: numOrNull(r.budget_micros ?? null),
    spentMicros: num(r.spent_micros ?? 0),
    reservedMicros: num(r.reserved_micros ?? 0),
    turnJobStatus: r.current_job_id === null ? null : ((r.turn_job_status ?? null) as JobStatus | null),
    turnPausedJobs: r.current_job_id === null ? 0 : num(r.turn_paused_jobs ?? 0),
    createdAt: num(r.created_at),
    updatedAt: num(r.updated_at),
  };
}

/** One task row (with keys and counts) read through `db`, or null. */
export async function readTask(c: StoreCtx, db: Db, id: number): Promise<TaskRow | null> {
  const row = await selectTasks(db).where('tasks.id', '=', id).executeTakeFirst();
  return row ? ((await toTaskRows(c, db, [row]))[0] ?? null) : null;
}

/** @throws Error `store: key ... is owned by task N` when an active task other than `self` owns one of `keys`. */
async function assertKeysFree(db: Db, keys: readonly string[], self: number | null): Promise<void> {
  if (keys.length === 0) return;
  const owned = await db.selectFrom('task_keys').select(['task_id', 'key']).where('key', 'in', [...keys]).where('active', '=', 1).execute();
  const other = owned.find((o) => num(o.task_id) !== self);
  if (other) throw new Error(`store: key ${JSON.stringify(other.key)} is owned by task ${num(other.task_id)}`);
}

/** Inserts a task in `trx` (shared with ingestDelivery). @throws as {@link createTask}. */
export async function insertTask(c: StoreCtx, trx: Transaction<Database>, t: NewTask): Promise<number> {
  if (typeof t.agent !== 'string' || t.agent.length === 0) throw new Error('store: agent must be a non-empty string');
  assertInt('coalesceMs', t.coalesceMs, 0);
  if (t.coalesceMs > MAX_COALESCE_MS) throw new Error(`store: coalesceMs must be at most ${MAX_COALESCE_MS} (one day), got ${t.coalesceMs}`);
  assertInt('now', t.now, 0);
  if (t.budgetMicros != null) assertInt('budgetMicros', t.budgetMicros, 1);
  const keys = [...new Set(t.keys)];
  if (keys.some((k) => typeof k !== 'string' || k.length === 0 || k.length > 1000)) throw new Error('store: keys must be strings of 1 to 1000 characters');
  await assertKeysFree(trx, keys, null);
  const row = await trx
    .insertInto('tasks')
    .values({
      agent: t.agent,
      title: t.title,
      input: c.codec.json(t.input),
      status: 'idle',
      coalesce_ms: t.coalesceMs,
      current_job_id: null,
      workspace_job_id: null,
      runner_id: null,
      session_id: null,
      turn: 0,
      window_until: null,
      trailing_due_at: null,
      last_event_at: null,
      slot_until: null,
      error: null,
      budget_micros: t.budgetMicros ?? null,
      created_at: t.now,
      updated_at: t.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const id = num(row.id);
  if (keys.length) await trx.insertInto('task_keys').values(keys.map((key) => ({ task_id: id, key, active: 1 }))).execute();
  return id;
}

/** Stores a new `idle` task owning `keys`, one transaction. @throws Error when a key is owned by an active task or a field is bad. */
export async function createTask(c: StoreCtx, t: NewTask): Promise<TaskRow> {
  return c.db.transaction().execute(async (trx) => {
    const id = await insertTask(c, trx, t);
    return (await readTask(c, trx, id))!;
  });
}

export async function getTask(c: StoreCtx, id: number): Promise<TaskRow | null> {
  assertInt('id', id, 1);
  return readTask(c, c.db, id);
}

export async function listTasks(c: StoreCtx, q: { status?: TaskStatus; limit: number; before?: number }): Promise<TaskRow[]> {
  assertInt('limit', q.limit, 1);
  if (q.limit > 1000) throw new Error('store: limit must be at most 1000');
  if (q.status !== undefined) TaskStatusSchema.parse(q.status);
  let sel = selectTasks(c.db).orderBy('tasks.id', 'desc').limit(q.limit);
  if (q.status) sel = sel.where('tasks.status', '=', q.status);
  if (q.before !== undefined) sel = sel.where('tasks.id', '<', q.before);
  return toTaskRows(c, c.db, await sel.execute());
}

export async function findTaskByKey(c: StoreCtx, key: string, includeCompleted = false): Promise<TaskRow | null> {
  return findTaskByKeyIn(c, c.db, key, includeCompleted);
}

/** As {@link findTaskByKey}, through `db` (a transaction). */
export async function findTaskByKeyIn(c: StoreCtx, db: Db, key: string, includeCompleted: boolean): Promise<TaskRow | null> {
  const id = await findTaskIdByKey(db, key, includeCompleted);
  return id === null ? null : readTask(c, db, id);
}

/** The id of the task owning `key` (active first; with `includeCompleted` the newest completed one too), or null. */
export async function findTaskIdByKey(db: Db, key: string, includeCompleted: boolean): Promise<number | null> {
  let q = db.selectFrom('task_keys').select(['task_id']).where('key', '=', key).orderBy('active', 'desc').orderBy('task_id', 'desc').limit(1);
  if (!includeCompleted) q = q.where('active', '=', 1);
  const row = await q.executeTakeFirst();
  return row ? num(row.task_id) : null;
}

export async function updateTask(c: StoreCtx, id: number, from: readonly TaskStatus[] | null, set: TaskUpdate, now: number): Promise<TaskRow | null> {
  assertInt('now', now, 0);
  if (set.status !== undefined) TaskStatusSchema.parse(set.status);
  const values: Record<string, unknown> = { updated_at: now };
  if (set.status !== undefined) values.status = set.status;
  if (set.error !== undefined) values.error = set.error;
  if (set.currentJobId !== undefined) values.current_job_id = set.currentJobId;
  if (set.workspaceJobId !== undefined) values.workspace_job_id = set.workspaceJobId;
  if (set.runnerId !== undefined) values.runner_id = set.runnerId;
  if (set.sessionId !== undefined) values.session_id = set.sessionId;
  if (set.trailingDueAt !== undefined) values.trailing_due_at = set.trailingDueAt;
  if (set.slotUntil !== undefined) {
    if (set.slotUntil !== null) assertInt('slotUntil', set.slotUntil, 0);
    values.slot_until = set.slotUntil;
  }
  if (set.budgetMicros !== undefined) {
    if (set.budgetMicros !== null) assertInt('budgetMicros', set.budgetMicros, 1);
    values.budget_micros = set.budgetMicros;
  }
  let q = c.db.updateTable('tasks').set(values).where('id', '=', id);
  if (from) q = q.where('status', 'in', [...from]);
  if (set.whereCurrentJobId !== undefined) q = q.where('current_job_id', '=', set.whereCurrentJobId);
  const r = await q.executeTakeFirst();
  return num(r.numUpdatedRows) > 0 ? readTask(c, c.db, id) : null;
}

export async function completeTask(c: StoreCtx, id: number, now: number): Promise<TaskRow | null> {
  assertInt('now', now, 0);
  return c.db.transaction().execute(async (trx) => {
    const r = await trx
      .updateTable('tasks')
      .set({ status: 'completed', trailing_due_at: null, slot_until: null, updated_at: now })
      .where('id', '=', id)
      .where('status', '!=', 'completed')
      .executeTakeFirst();
    if (num(r.numUpdatedRows) === 0) return null;
    await trx.updateTable('task_keys').set({ active: 0 }).where('task_id', '=', id).execute();
    return readTask(c, trx, id);
  });
}

export async function reopenTask(c: StoreCtx, id: number, now: number): Promise<TaskRow | null> {
  assertInt('now', now, 0);
  return c.db.transaction().execute(async (trx) => {
    const keys = (await trx.selectFrom('task_keys').select('key').where('task_id', '=', id).execute()).map((k) => k.key);
    const r = await trx
      .updateTable('tasks')
      .set({ status: 'idle', error: null, updated_at: now })
      .where('id', '=', id)
      .where('status', '=', 'completed')
      .executeTakeFirst();
    if (num(r.numUpdatedRows) === 0) return null;
    await assertKeysFree(trx, keys, id);
    await trx.updateTable('task_keys').set({ active: 1 }).where('task_id', '=', id).execute();
    return readTask(c, trx, id);
  });
}

/** Runner slots kept by idle tasks (see TaskStore.listTaskSlots in tasks-types.ts), epoch ms `now`; one query. */
export async function listTaskSlots(c: StoreCtx, now: number): Promise<TaskSlot[]> {
  assertInt('now', now, 0);
  const rows = await c.db
    .selectFrom('tasks')
    .select(['id', 'runner_id', 'workspace_job_id', 'slot_until'])
    .where('slot_until', '>', now)
    .where('status', 'in', ['idle', 'running'])
    .where('runner_id', 'is not', null)
    .where('workspace_job_id', 'is not', null)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ taskId: num(r.id), runnerId: num(r.runner_id), workspace: num(r.workspace_job_id), until: num(r.slot_until) }));
}

/**
 * Adds `addMicros` (≥ 1) to task `id`'s budget (0026) in one conditional UPDATE, so that two
 * top-ups at once both count and neither passes `capMicros`. µ$.
 * @returns the task after it; `no_budget` when the task has none (nothing to add to: set one
 *   first); `{ capped: limit }` when the budget would pass `capMicros` (nothing changed;
 *   `limit` the budget now); null when there is no task `id`.
 * @throws Error naming `addMicros` or `capMicros` when not a positive integer.
 */
export async function addTaskBudget(c: StoreCtx, id: number, addMicros: number, capMicros: number, now: number): Promise<TaskRow | 'no_budget' | { capped: number } | null> {
  assertInt('addMicros', addMicros, 1);
  assertInt('capMicros', capMicros, 1);
  assertInt('now', now, 0);
  const r = await c.db
    .updateTable('tasks')
    .set({ budget_micros: sql<number>`budget_micros + ${addMicros}`, updated_at: now })
    .where('id', '=', id)
    .where('budget_micros', 'is not', null)
    .where(sql<boolean>`budget_micros + ${addMicros} <= ${capMicros}`)
    .executeTakeFirst();
  if (num(r.numUpdatedRows) > 0) return readTask(c, c.db, id);
  const row = await c.db.selectFrom('tasks').select('budget_micros').where('id', '=', id).executeTakeFirst();
  if (!row) return null;
  return row.budget_micros === null ? 'no_budget' : { capped: num(row.budget_micros) };
}

/** The task whose turn job `jobId` is (0016 `task_turns`, indexed by job in 0026), or null: a job tree's root finds its task. */
export async function taskOfTurnJob(c: StoreCtx, jobId: number): Promise<number | null> {
  assertInt('jobId', jobId, 1);
  const row = await c.db.selectFrom('task_turns').select('task_id').where('job_id', '=', jobId).executeTakeFirst();
  return row ? num(row.task_id) : null;
}

import { num, numOrNull } from './codec.js';
import type { StoreCtx } from './ctx.js';
import { noteOnTask, type EventEffect } from './ingest-window.js';
import { pairKey, type DeliveryValues, type EventValues, type IngestTask, type TaskWindowValues, type Trx } from './ingest-sql.js';
import { pgIngest } from './ingest-sql-pg.js';
import { sqliteIngest } from './ingest-sql-sqlite.js';
import { taskRowOf } from './tasks.js';
import { eventValues } from './tasks-turns.js';
import type { IngestResult, NewDelivery, TaskEventRow, TaskRow, WindowDecision } from './tasks-types.js';

/**
 * Ingests deliveries that create no task (`createTask` absent) inside `trx`, set-based (issue 7
 * throughput): the same outcome as ingesting each alone, in the order given, but with a fixed
 * number of statements per batch (ingest-sql.ts; on PostgreSQL 3 plus BEGIN/COMMIT, however
 * many deliveries):
 * 1. lock and read the tasks owning the batch's keys (active; for `includeCompleted`
 *    deliveries also completed owners), in id order; the fallback tasks likewise, in a second
 *    statement, only when some delivery has no owner;
 * 2. insert every distinct (receiver, delivery id) with the task it goes to, `ON CONFLICT DO
 *    NOTHING` under the unique constraint: a row not inserted is a repeat (of an earlier
 *    transaction, or of an earlier delivery in this batch) and answers the task the first one
 *    went to (one more statement, only when there are repeats); the same statement reads the
 *    tasks' pending prompt counts (their pending events are the stored counter of the locked
 *    row, 0017);
 * 3. in order, each new delivery's event moves its task (`noteOnTask`: stale check,
 *    coalescing window); then one statement writes the tasks that got events (window columns,
 *    pending-event counter) and inserts the events.
 * A repeat changes nothing. Deliveries are assumed checked (receivers.ts checkDelivery).
 * Results in the order given; `task` is the task as it stands right after that delivery.
 * `lastSent`, when given, is called once the batch's last statement has been sent and before
 * its answer is awaited (the pipelined PostgreSQL path sends COMMIT right behind it:
 * ingest-pg-pipeline.ts); never called when an earlier statement failed.
 * @throws the driver's error (the caller's transaction then stores nothing).
 */
export async function ingestBatchIn(c: StoreCtx, trx: Trx, ds: readonly NewDelivery[], lastSent?: () => void): Promise<IngestResult[]> {
  const sql = c.dialect === 'postgres' ? pgIngest : sqliteIngest;
  const keys = new Map<string, boolean>(); // key → also its completed owners (a reopen)
  for (const d of ds) if (d.event.key !== null) keys.set(d.event.key, (keys.get(d.event.key) ?? false) || d.includeCompleted === true);
  const tasks = new Map<number, IngestTask>();
  const add = (ts: IngestTask[]) => ts.forEach((t) => tasks.set(num(t.row.id), t));
  if (keys.size) add(await sql.lockOwners(trx, [...keys].map(([key, past]) => ({ key, past }))));
  const owners = ownersOf(tasks);
  const owner = (d: NewDelivery) => (d.event.key === null ? undefined : (owners.active.get(d.event.key) ?? (d.includeCompleted ? owners.past.get(d.event.key) : undefined)));
  const fallbacks = unique(ds.filter((d) => owner(d) === undefined && d.fallbackTaskId !== null && !tasks.has(d.fallbackTaskId)).map((d) => d.fallbackTaskId!));
  if (fallbacks.length) add(await sql.lockTasks(trx, fallbacks));
  // A completed fallback task takes no more events: they are unmatched (they were answered
  // `queued` and piled up on it).
  const openFallback = (id: number | null) => id !== null && tasks.has(id) && tasks.get(id)!.row.status !== 'completed';
  const target = ds.map((d) => owner(d) ?? (openFallback(d.fallbackTaskId) ? d.fallbackTaskId : null));

  // Dedup: the first of each (receiver, delivery id) in the batch is inserted; the store says whether it was new.
  const first = new Map<string, number>();
  const rows: DeliveryValues[] = [];
  ds.forEach((d, i) => {
    const k = pairKey(d.receiverId, d.deliveryId);
    if (first.has(k)) return;
    first.set(k, i);
    rows.push({ receiverId: d.receiverId, deliveryId: d.deliveryId, receivedAt: d.now, taskId: target[i]! });
  });
  const { inserted, counts } = await sql.insertDeliveries(trx, rows, unique(target.filter((id): id is number => id !== null)));
  for (const [id, n] of counts) {
    const t = tasks.get(id)!;
    t.row = { ...t.row, queued_prompts: n.queuedPrompts };
  }
  const repeats = rows.filter((r) => !inserted.has(pairKey(r.receiverId, r.deliveryId)));
  const stored = repeats.length ? await sql.storedTaskIds(trx, repeats) : new Map<string, number | null>();

  const events: EventValues[] = [];
  const added = new Map<number, number>(); // task id → events this batch adds to it
  const out: IngestResult[] = [];
  const fresh: { i: number; task: TaskRow | null; stale: boolean; window?: WindowDecision }[] = [];
  ds.forEach((d, i) => {
    const k = pairKey(d.receiverId, d.deliveryId);
    const at = first.get(k)!;
    if (at !== i || !inserted.has(k)) {
      out[i] = { duplicate: true, taskId: inserted.has(k) ? target[at]! : (stored.get(k) ?? null) };
      return;
    }
    const taskId = target[i]!;
    let effect: EventEffect | null = null;
    let task: TaskRow | null = null;
    if (taskId !== null) {
      const t = tasks.get(taskId)!;
      effect = noteOnTask(t.row, d);
      added.set(taskId, (added.get(taskId) ?? 0) + 1);
      t.row = { ...t.row, ...effect.set, pending_events: num(t.row.pending_events ?? 0) + 1 };
      task = taskRowOf(c, t.row, t.keys);
    }
    events.push(eventValues(taskId, d.event, d.now));
    fresh.push({ i, task, stale: effect?.stale ?? false, ...(d.coalesce ? { window: effect?.window ?? null } : {}) });
  });
  const written = events.length ? sql.write(trx, [...added].map(([id, n]) => windowValues(tasks.get(id)!, n)), events) : Promise.resolve([]);
  lastSent?.();
  const ids = await written;
  fresh.forEach(({ i, ...f }, n) => {
    const e = events[n]!;
    const event: TaskEventRow = { id: ids[n]!, taskId: e.task_id, receiverId: e.receiver_id, key: e.key, kind: e.kind, actor: e.actor, summary: e.summary, occurredAt: e.occurred_at, receivedAt: e.received_at, turn: null };
    out[i] = { duplicate: false, created: false, ...f, event };
  });
  return out;
}

/** Key → owning task id among `tasks`: the active owner, and the newest (highest id) past owner. */
function ownersOf(tasks: Map<number, IngestTask>): { active: Map<string, number>; past: Map<string, number> } {
  const active = new Map<string, number>();
  const past = new Map<string, number>();
  for (const [id, t] of tasks) {
    for (const k of t.owns) active.set(k, id);
    for (const k of t.owned) if ((past.get(k) ?? 0) < id) past.set(k, id);
  }
  return { active, past };
}

/** The final coalescing columns of `t` and the `addEvents` events this batch gives it. */
function windowValues(t: IngestTask, addEvents: number): TaskWindowValues {
  const r = t.row;
  return { id: num(r.id), lastEventAt: numOrNull(r.last_event_at), windowUntil: numOrNull(r.window_until), trailingDueAt: numOrNull(r.trailing_due_at), updatedAt: num(r.updated_at), addEvents };
}

function unique<T>(xs: T[]): T[] {
  return [...new Set(xs)];
}

import { sql, type Selectable, type Transaction } from 'kysely';
import type { Database } from './schema.js';
import { ReceiverPolicies, ReceiverProvider } from '../protocol/index.js';
import { num, numOrNull } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { ReceiversTable } from './tasks-schema.js';
import type { IngestResult, NewDelivery, NewReceiver, ReceiverRow, WindowDecision } from './tasks-types.js';
import { insertTask, selectTasks, toTaskRows, type TaskSelect } from './tasks.js';
import { checkEvent, eventValues, toTaskEventRow } from './tasks-turns.js';
import { ingestBatchIn } from './ingest-batch.js';
import { noteOnTask } from './ingest-window.js';

/** Receivers (webhook endpoints) and the ingestion of their deliveries (issue 7). */

function toReceiverRow(c: StoreCtx, r: Selectable<ReceiversTable>): ReceiverRow {
  return {
    id: num(r.id),
    name: r.name,
    provider: r.provider as ReceiverRow['provider'],
    auth: r.auth as ReceiverRow['auth'],
    keyExpr: r.key_expr,
    summaryExpr: r.summary_expr,
    fallbackTaskId: numOrNull(r.fallback_task_id),
    policies: ReceiverPolicies.parse(c.codec.parse(r.policies)),
    createdAt: num(r.created_at),
  };
}

export async function createReceiver(c: StoreCtx, r: NewReceiver): Promise<ReceiverRow> {
  if (typeof r.name !== 'string' || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(r.name)) throw new Error('store: receiver name must be lowercase letters, digits and dashes (1 to 63)');
  ReceiverProvider.parse(r.provider);
  if (r.auth !== 'hmac' && r.auth !== 'bearer') throw new Error(`store: auth must be hmac or bearer, got ${JSON.stringify(r.auth)}`);
  if (r.fallbackTaskId !== null) assertInt('fallbackTaskId', r.fallbackTaskId, 1);
  assertInt('now', r.now, 0);
  const policies = ReceiverPolicies.parse(r.policies);
  const taken = await c.db.selectFrom('receivers').select('id').where('name', '=', r.name).executeTakeFirst();
  if (taken) throw new Error(`store: receiver name ${JSON.stringify(r.name)} is taken`);
  const row = await c.db
    .insertInto('receivers')
    .values({
      name: r.name,
      provider: r.provider,
      auth: r.auth,
      secret: r.secret,
      token_hash: r.tokenHash,
      key_expr: r.keyExpr,
      summary_expr: r.summaryExpr,
      fallback_task_id: r.fallbackTaskId,
      policies: c.codec.json(policies),
      created_at: r.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toReceiverRow(c, row);
}

export async function listReceivers(c: StoreCtx): Promise<ReceiverRow[]> {
  return (await c.db.selectFrom('receivers').selectAll().orderBy('id').execute()).map((r) => toReceiverRow(c, r));
}

export async function getReceiver(c: StoreCtx, id: number): Promise<ReceiverRow | null> {
  assertInt('id', id, 1);
  const row = await c.db.selectFrom('receivers').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toReceiverRow(c, row) : null;
}

export async function findReceiverCredentials(c: StoreCtx, name: string): Promise<{ receiver: ReceiverRow; secret: string | null; tokenHash: string | null } | null> {
  const row = await c.db.selectFrom('receivers').selectAll().where('name', '=', name).executeTakeFirst();
  return row ? { receiver: toReceiverRow(c, row), secret: row.secret, tokenHash: row.token_hash } : null;
}

export async function deleteReceiver(c: StoreCtx, id: number): Promise<boolean> {
  assertInt('id', id, 1);
  return c.db.transaction().execute(async (trx) => {
    await trx.updateTable('task_events').set({ receiver_id: null }).where('receiver_id', '=', id).execute();
    await trx.deleteFrom('deliveries').where('receiver_id', '=', id).execute();
    const r = await trx.deleteFrom('receivers').where('id', '=', id).executeTakeFirst();
    return num(r.numDeletedRows) > 0;
  });
}

/**
 * Stores a delivery and its event in one transaction (issue 7): the delivery id under its
 * unique constraint (a repeat → `{ duplicate: true, taskId }` with the task the first one went
 * to, nothing else written); the owning task (active owner of the key, else a task made by
 * `createTask`, else the fallback task), locked (PostgreSQL `FOR UPDATE`) while its
 * `last_event_at` moves forward (never back: an older event is `stale`) and, with `coalesce`,
 * its window is noted as {@link noteTaskEvent} would. A delivery that creates no task goes
 * the set-based way of ingest-batch.ts (a batch of one).
 * @throws Error naming the field when the delivery is malformed; the key-ownership error of
 *   `createTask` when two deliveries create a task for one key at once (nothing stored).
 */
export async function ingestDelivery(c: StoreCtx, d: NewDelivery): Promise<IngestResult> {
  checkDelivery(d);
  return c.db.transaction().execute(async (trx) => (d.createTask ? ingestCreating(c, trx, d) : (await ingestBatchIn(c, trx, [d]))[0]!));
}

/**
 * Several deliveries in ONE transaction (one commit, so one WAL flush, for all: issue 7
 * throughput), each as {@link ingestDelivery} would, in the order given; results in that order.
 * Runs of deliveries that create no task go set-based (ingest-batch.ts: a few statements per
 * run, not per delivery); one that may create a task goes alone, in its place.
 * All or nothing: when one fails (a bad field, a key taken by a concurrent create, a deadlock
 * with another replica) nothing of the batch is stored and the error is thrown, so the caller
 * may ingest them one by one. At most 500 deliveries.
 * @throws Error naming the field of the first malformed delivery (nothing stored).
 */
export async function ingestDeliveries(c: StoreCtx, ds: readonly NewDelivery[]): Promise<IngestResult[]> {
  checkDeliveries(ds);
  if (ds.length === 0) return [];
  return c.db.transaction().execute(async (trx) => {
    const out: IngestResult[] = [];
    for (let i = 0; i < ds.length; ) {
      if (ds[i]!.createTask) {
        out.push(await ingestCreating(c, trx, ds[i++]!));
        continue;
      }
      let j = i;
      while (j < ds.length && !ds[j]!.createTask) j++;
      out.push(...(await ingestBatchIn(c, trx, ds.slice(i, j))));
      i = j;
    }
    return out;
  });
}

/** The checks of {@link ingestDeliveries}. @throws Error naming the field of the first malformed delivery, or when `ds` is not an array of at most 500. */
export function checkDeliveries(ds: readonly NewDelivery[]): void {
  if (!Array.isArray(ds) || ds.length > 500) throw new Error('store: deliveries must be an array of at most 500');
  for (const d of ds) checkDelivery(d);
}

/** @throws Error naming the field when a delivery is malformed. */
export function checkDelivery(d: NewDelivery): void {
  assertInt('receiverId', d.receiverId, 1);
  assertInt('now', d.now, 0);
  if (typeof d.deliveryId !== 'string' || d.deliveryId.length === 0 || d.deliveryId.length > 200) throw new Error('store: deliveryId must be a string of 1 to 200 characters');
  if (d.coalesce !== undefined && d.coalesce !== 'always' && d.coalesce !== 'unless_stale') throw new Error(`store: coalesce must be always or unless_stale, got ${JSON.stringify(d.coalesce)}`);
  if (d.fallbackTaskId !== null) assertInt('fallbackTaskId', d.fallbackTaskId, 1);
  checkEvent(d.event);
}

/**
 * One delivery that may create a task (an `assign` policy), inside `trx`: the delivery first
 * (so a repeat creates nothing), then the owner (locked), else the new task, else the
 * fallback; then its task id on the delivery row (0015). Statements: insert delivery, select
 * task, [insert task + keys + select], update task, insert event, read keys, set task id.
 */
async function ingestCreating(c: StoreCtx, trx: Transaction<Database>, d: NewDelivery): Promise<IngestResult> {
  const pg = c.dialect === 'postgres';
  const ins = await trx
    .insertInto('deliveries')
    .values({ receiver_id: d.receiverId, delivery_id: d.deliveryId, received_at: d.now })
    .onConflict((oc) => oc.columns(['receiver_id', 'delivery_id']).doNothing())
    .executeTakeFirst();
  if (num(ins.numInsertedOrUpdatedRows ?? 0) === 0) {
    const first = await trx.selectFrom('deliveries').select('task_id').where('receiver_id', '=', d.receiverId).where('delivery_id', '=', d.deliveryId).executeTakeFirst();
    return { duplicate: true, taskId: numOrNull(first?.task_id ?? null) };
  }
  const key = d.event.key;
  let row: TaskSelect | undefined;
  let created = false;
  if (key !== null) {
    let q = selectTasks(trx).innerJoin('task_keys', 'task_keys.task_id', 'tasks.id').where('task_keys.key', '=', key).orderBy('task_keys.active', 'desc').orderBy('tasks.id', 'desc').limit(1);
    if (d.includeCompleted !== true) q = q.where('task_keys.active', '=', 1);
    row = await (pg ? q.forUpdate(['tasks']) : q).executeTakeFirst();
    if (!row && d.createTask) {
      const id = await insertTask(c, trx, { ...d.createTask, keys: [...new Set([key, ...d.createTask.keys])], now: d.now });
      row = await selectTasks(trx).where('tasks.id', '=', id).executeTakeFirst();
      created = true;
    }
  }
  if (!row && d.fallbackTaskId !== null) {
    // A completed fallback task takes no more events (ingest-batch.ts likewise).
    const q = selectTasks(trx).where('tasks.id', '=', d.fallbackTaskId).where('tasks.status', '!=', 'completed');
    row = await (pg ? q.forUpdate(['tasks']) : q).executeTakeFirst();
  }
  let stale = false;
  let window: WindowDecision = null;
  if (row) {
    const e = noteOnTask(row, d);
    stale = e.stale;
    window = e.window;
    // The event below is pending on the task: its counter (0017) moves in the same statement as the window.
    await trx
      .updateTable('tasks')
      .set({ ...e.set, pending_events: sql<number>`pending_events + 1` })
      .where('id', '=', row.id)
      .execute();
    row = { ...row, ...e.set, pending_events: num(row.pending_events ?? 0) + 1 } as TaskSelect;
  }
  const taskId = row ? num(row.id) : null;
  const ev = await trx.insertInto('task_events').values(eventValues(taskId, d.event, d.now)).returningAll().executeTakeFirstOrThrow();
  const task = row ? ((await toTaskRows(c, trx, [row]))[0] ?? null) : null;
  if (taskId !== null) await trx.updateTable('deliveries').set({ task_id: taskId }).where('receiver_id', '=', d.receiverId).where('delivery_id', '=', d.deliveryId).execute();
  return { duplicate: false, task, created, stale, event: toTaskEventRow(ev), ...(d.coalesce ? { window } : {}) } as const;
}

import { num, numOrNull } from './codec.js';
import { countsOf, groupOwners, pairKey, run, type EventValues, type IngestSql, type OwnerRow } from './ingest-sql.js';
import { PREPARE } from './pg-prepared.js';
import type { TasksTable } from './tasks-schema.js';

/**
 * Every `tasks` column, listed (not `t.*`): the statements below are prepared (pg-prepared.ts),
 * and a prepared `*` fails once a later migration adds a column ("cached plan must not change
 * result type"). A column added to TasksTable and not listed here fails to compile (below).
 */
const TASK_COLUMNS = [
  'id',
  'agent',
  'title',
  'input',
  'status',
  'coalesce_ms',
  'current_job_id',
  'workspace_job_id',
  'runner_id',
  'session_id',
  'turn',
  'window_until',
  'trailing_due_at',
  'last_event_at',
  'slot_until',
  'error',
  'created_at',
  'updated_at',
  'pending_events',
  'budget_micros',
] as const satisfies readonly (keyof TasksTable)[];
const listsEveryColumn: [Exclude<keyof TasksTable, (typeof TASK_COLUMNS)[number]>] extends [never] ? true : never = true;
void listsEveryColumn;
const TASK_COLS = TASK_COLUMNS.map((k) => `t.${k}`).join(', ');

const ACTIVE_KEYS = 'ARRAY(SELECT a.key FROM task_keys a WHERE a.task_id = t.id AND a.active = 1 ORDER BY a.key) AS active_keys';

/**
 * The batch-ingest statements on PostgreSQL (see IngestSql in ingest-sql.ts): one statement per
 * step for the whole batch, each a fixed text (arrays as parameters) run as a prepared statement
 * ({@link PREPARE}): parsed and planned once per pooled connection. Planning these `unnest`
 * statements was about half of PostgreSQL's CPU per delivery (bench/webhooks.bench.js: PostgreSQL
 * backends 190-225 µs per delivery before, 125 after, on a loaded 2-core machine).
 */
export const pgIngest: IngestSql = {
  async lockOwners(trx, keys) {
    const { rows } = await run<OwnerRow>(
      trx,
      `${PREPARE} SELECT ${TASK_COLS}, q.i::int - 1 AS pos, k.active, ${ACTIVE_KEYS}
      FROM unnest($1::text[], $2::bool[]) WITH ORDINALITY AS q(key, past, i)
        JOIN task_keys k ON k.key = q.key AND (k.active = 1 OR q.past)
        JOIN tasks t ON t.id = k.task_id
      ORDER BY t.id FOR UPDATE OF t`,
      [keys.map((k) => k.key), keys.map((k) => k.past)],
    );
    return groupOwners(rows, keys, (r) => r.active_keys as string[]);
  },
  async lockTasks(trx, ids) {
    const { rows } = await run<OwnerRow>(trx, `${PREPARE} SELECT ${TASK_COLS}, ${ACTIVE_KEYS} FROM tasks t WHERE t.id = ANY($1::int[]) ORDER BY t.id FOR UPDATE`, [ids]);
    return groupOwners(rows, [], (r) => r.active_keys as string[]);
  },
  async insertDeliveries(trx, rows, countIds) {
    const { rows: got } = await run<{ kind: string; id: number; delivery_id: string | null; queued_prompts: unknown }>(
      trx,
      // One round trip for two answers: the rows inserted ('i'), then the counts ('c'). The
      // insert is sorted, so two replicas inserting the same ids wait on each other in one
      // order (no deadlock).
      `${PREPARE} WITH ins AS (
        INSERT INTO deliveries (receiver_id, delivery_id, received_at, task_id)
        SELECT r, d, at, t FROM unnest($1::int[], $2::text[], $3::int8[], $4::int[]) AS u(r, d, at, t) ORDER BY r, d
        ON CONFLICT (receiver_id, delivery_id) DO NOTHING RETURNING receiver_id, delivery_id)
      SELECT 'i' AS kind, receiver_id AS id, delivery_id, NULL::int8 AS queued_prompts FROM ins
      UNION ALL
      SELECT 'c', t.id, NULL, (SELECT count(*) FROM task_prompts p WHERE p.task_id = t.id AND p.turn IS NULL)
      FROM unnest($5::int[]) AS t(id)`,
      [rows.map((r) => r.receiverId), rows.map((r) => r.deliveryId), rows.map((r) => r.receivedAt), rows.map((r) => r.taskId), countIds],
    );
    return {
      inserted: new Set(got.filter((r) => r.kind === 'i').map((r) => pairKey(num(r.id), r.delivery_id!))),
      counts: countsOf(got.filter((r) => r.kind === 'c')),
    };
  },
  async storedTaskIds(trx, pairs) {
    const { rows } = await run<{ receiver_id: number; delivery_id: string; task_id: number | null }>(
      trx,
      `${PREPARE} SELECT receiver_id, delivery_id, task_id FROM deliveries WHERE (receiver_id, delivery_id) IN (SELECT * FROM unnest($1::int[], $2::text[]))`,
      [pairs.map((p) => p.receiverId), pairs.map((p) => p.deliveryId)],
    );
    return new Map(rows.map((r) => [pairKey(num(r.receiver_id), r.delivery_id), numOrNull(r.task_id)]));
  },
  async write(trx, tasks, events) {
    const col = <K extends keyof EventValues>(k: K) => events.map((r) => r[k]);
    const { rows: got } = await run<{ id: number }>(
      trx,
      // One statement: the UPDATE runs as a data-modifying CTE. Events are inserted in `ord`
      // order, so their serial ids rise in the order given (then sorted: RETURNING's order is
      // not promised).
      `${PREPARE} WITH upd AS (
        UPDATE tasks t SET last_event_at = u.last, window_until = u.win, trailing_due_at = u.due, updated_at = u.upd, pending_events = t.pending_events + u.n
        FROM unnest($1::int[], $2::int8[], $3::int8[], $4::int8[], $5::int8[], $14::int[]) AS u(id, last, win, due, upd, n) WHERE t.id = u.id)
      INSERT INTO task_events (task_id, receiver_id, key, kind, actor, summary, occurred_at, received_at, turn)
      SELECT task_id, receiver_id, key, kind, actor, summary, occurred_at, received_at, NULL
      FROM unnest($6::int[], $7::int[], $8::text[], $9::text[], $10::text[], $11::text[], $12::int8[], $13::int8[])
        WITH ORDINALITY AS u(task_id, receiver_id, key, kind, actor, summary, occurred_at, received_at, ord)
      ORDER BY ord RETURNING id`,
      [
        tasks.map((r) => r.id),
        tasks.map((r) => r.lastEventAt),
        tasks.map((r) => r.windowUntil),
        tasks.map((r) => r.trailingDueAt),
        tasks.map((r) => r.updatedAt),
        col('task_id'),
        col('receiver_id'),
        col('key'),
        col('kind'),
        col('actor'),
        col('summary'),
        col('occurred_at'),
        col('received_at'),
        tasks.map((r) => r.addEvents),
      ],
    );
    return got.map((r) => num(r.id)).sort((a, b) => a - b);
  },
};

import { num, numOrNull } from './codec.js';
import { countsOf, groupOwners, pairKey, run, type EventValues, type IngestSql, type OwnerRow } from './ingest-sql.js';

const ACTIVE_KEYS = 'ARRAY(SELECT a.key FROM task_keys a WHERE a.task_id = t.id AND a.active = 1 ORDER BY a.key) AS active_keys';

/** The batch-ingest statements on PostgreSQL (see IngestSql in ingest-sql.ts): one statement per step for the whole batch. */
export const pgIngest: IngestSql = {
  async lockOwners(trx, keys) {
    const { rows } = await run<OwnerRow>(
      trx,
      `SELECT t.*, q.i::int - 1 AS pos, k.active, ${ACTIVE_KEYS}
      FROM unnest($1::text[], $2::bool[]) WITH ORDINALITY AS q(key, past, i)
        JOIN task_keys k ON k.key = q.key AND (k.active = 1 OR q.past)
        JOIN tasks t ON t.id = k.task_id
      ORDER BY t.id FOR UPDATE OF t`,
      [keys.map((k) => k.key), keys.map((k) => k.past)],
    );
    return groupOwners(rows, keys, (r) => r.active_keys as string[]);
  },
  async lockTasks(trx, ids) {
    const { rows } = await run<OwnerRow>(trx, `SELECT t.*, ${ACTIVE_KEYS} FROM tasks t WHERE t.id = ANY($1::int[]) ORDER BY t.id FOR UPDATE`, [ids]);
    return groupOwners(rows, [], (r) => r.active_keys as string[]);
  },
  async insertDeliveries(trx, rows, countIds) {
    const { rows: got } = await run<{ kind: string; id: number; delivery_id: string | null; queued_prompts: unknown; pending_events: unknown }>(
      trx,
      // One round trip for two answers: the rows inserted ('i'), then the counts ('c'). The
      // insert is sorted, so two replicas inserting the same ids wait on each other in one
      // order (no deadlock).
      `WITH ins AS (
        INSERT INTO deliveries (receiver_id, delivery_id, received_at, task_id)
        SELECT r, d, at, t FROM unnest($1::int[], $2::text[], $3::int8[], $4::int[]) AS u(r, d, at, t) ORDER BY r, d
        ON CONFLICT (receiver_id, delivery_id) DO NOTHING RETURNING receiver_id, delivery_id)
      SELECT 'i' AS kind, receiver_id AS id, delivery_id, NULL::int8 AS queued_prompts, NULL::int8 AS pending_events FROM ins
      UNION ALL
      SELECT 'c', t.id, NULL,
        (SELECT count(*) FROM task_prompts p WHERE p.task_id = t.id AND p.turn IS NULL),
        (SELECT count(*) FROM task_events e WHERE e.task_id = t.id AND e.turn IS NULL)
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
      `SELECT receiver_id, delivery_id, task_id FROM deliveries WHERE (receiver_id, delivery_id) IN (SELECT * FROM unnest($1::int[], $2::text[]))`,
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
      `WITH upd AS (
        UPDATE tasks t SET last_event_at = u.last, window_until = u.win, trailing_due_at = u.due, updated_at = u.upd
        FROM unnest($1::int[], $2::int8[], $3::int8[], $4::int8[], $5::int8[]) AS u(id, last, win, due, upd) WHERE t.id = u.id)
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
      ],
    );
    return got.map((r) => num(r.id)).sort((a, b) => a - b);
  },
};

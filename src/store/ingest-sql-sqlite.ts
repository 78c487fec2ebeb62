import { numOrNull } from './codec.js';
import { countsOf, groupOwners, pairKey, run, type CountRow, type IngestSql, type OwnerRow } from './ingest-sql.js';

const ACTIVE_KEYS = '(SELECT json_group_array(a.key ORDER BY a.key) FROM task_keys a WHERE a.task_id = t.id AND a.active = 1) AS active_keys';
const activeKeys = (r: OwnerRow) => JSON.parse(String(r.active_keys)) as string[];

/**
 * The batch-ingest statements on SQLite (see IngestSql in ingest-sql.ts): one writer (the
 * data-folder lock) and no round trips, so nothing is locked ("lock" only reads) and each row
 * is its own prepared statement.
 */
export const sqliteIngest: IngestSql = {
  async lockOwners(trx, keys) {
    // A query per key, bound as a parameter: the key is matched exactly as it was stored (no
    // round trips here, and the statement stays prepared).
    const rows: OwnerRow[] = [];
    for (const [pos, k] of keys.entries()) {
      const got = await run<OwnerRow>(
        trx,
        `SELECT t.*, ? AS pos, k.active, ${ACTIVE_KEYS} FROM task_keys k JOIN tasks t ON t.id = k.task_id WHERE k.key = ? AND (k.active = 1 OR ?)`,
        [pos, k.key, k.past ? 1 : 0],
      );
      rows.push(...got.rows);
    }
    return groupOwners(rows, keys, activeKeys);
  },
  async lockTasks(trx, ids) {
    const { rows } = await run<OwnerRow>(trx, `SELECT t.*, ${ACTIVE_KEYS} FROM tasks t WHERE t.id IN (SELECT value FROM json_each(?)) ORDER BY t.id`, [JSON.stringify(ids)]);
    return groupOwners(rows, [], activeKeys);
  },
  async insertDeliveries(trx, rows, countIds) {
    const inserted = new Set<string>();
    for (const r of rows) {
      const res = await run(trx, `INSERT INTO deliveries (receiver_id, delivery_id, received_at, task_id) VALUES (?, ?, ?, ?) ON CONFLICT (receiver_id, delivery_id) DO NOTHING`, [r.receiverId, r.deliveryId, r.receivedAt, r.taskId]);
      if (Number(res.numAffectedRows ?? 0) > 0) inserted.add(pairKey(r.receiverId, r.deliveryId));
    }
    const { rows: counts } = countIds.length
      ? await run<CountRow>(
          trx,
          `SELECT t.value AS id,
            (SELECT count(*) FROM task_prompts p WHERE p.task_id = t.value AND p.turn IS NULL) AS queued_prompts
          FROM json_each(?) AS t`,
          [JSON.stringify(countIds)],
        )
      : { rows: [] };
    return { inserted, counts: countsOf(counts) };
  },
  async storedTaskIds(trx, pairs) {
    const out = new Map<string, number | null>();
    for (const p of pairs) {
      const { rows } = await run<{ task_id: number | null }>(trx, `SELECT task_id FROM deliveries WHERE receiver_id = ? AND delivery_id = ?`, [p.receiverId, p.deliveryId]);
      if (rows[0]) out.set(pairKey(p.receiverId, p.deliveryId), numOrNull(rows[0].task_id));
    }
    return out;
  },
  async write(trx, tasks, events) {
    for (const r of tasks) {
      await run(trx, `UPDATE tasks SET last_event_at = ?, window_until = ?, trailing_due_at = ?, updated_at = ?, pending_events = pending_events + ? WHERE id = ?`, [
        r.lastEventAt,
        r.windowUntil,
        r.trailingDueAt,
        r.updatedAt,
        r.addEvents,
        r.id,
      ]);
    }
    const ids: number[] = [];
    for (const r of events) {
      const res = await run(
        trx,
        `INSERT INTO task_events (task_id, receiver_id, key, kind, actor, summary, occurred_at, received_at, turn) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
        [r.task_id, r.receiver_id, r.key, r.kind, r.actor, r.summary, r.occurred_at, r.received_at],
      );
      ids.push(Number(res.insertId));
    }
    return ids;
  },
};

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../postgres.js';
import { openSqliteStore } from '../sqlite.js';
import { createTestDatabase } from '../test-pg.js';
import type { NewTaskEvent, Store } from '../types.js';
import { taskPendingEvents } from './0017_task_pending_events.js';

const T = 1_800_000_000_000;
const ev = (n: number): NewTaskEvent => ({ receiverId: null, key: 'k', kind: 'note', actor: null, summary: `e${n}`, occurredAt: T + n });

/**
 * Stores, through the store, task 1 with 3 events a turn took and 2 pending, task 2 with none,
 * and task 3 with 1 pending; returns their ids.
 */
async function seed(s: Store): Promise<number[]> {
  const ids: number[] = [];
  for (const title of ['one', 'two', 'three']) ids.push((await s.createTask({ agent: 'a', title, input: {}, keys: [], coalesceMs: 1000, now: T })).id);
  for (const n of [1, 2, 3]) await s.addTaskEvent(ids[0]!, ev(n), T + n);
  expect((await s.claimTaskTurn(ids[0]!, T + 10))?.events.length).toBe(3);
  for (const n of [4, 5]) await s.addTaskEvent(ids[0]!, ev(n), T + n);
  await s.addTaskEvent(ids[2]!, ev(6), T + 6);
  return ids;
}

/** Runs 0017 down and up again on `db` (the backfill of an older database), then reads each task's counter. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are untyped (as in the migration itself)
async function redo(db: Kysely<any>, ids: number[]): Promise<number[]> {
  await taskPendingEvents().down!(db);
  await taskPendingEvents().up(db);
  const rows = (await db.selectFrom('tasks').select(['id', 'pending_events']).orderBy('id').execute()) as { id: number; pending_events: number | string }[];
  return ids.map((id) => Number(rows.find((r) => Number(r.id) === id)?.pending_events));
}

describe('migration 0017: tasks.pending_events filled from the stored events (SQLite)', () => {
  it('counts each task’s events no turn took', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-0017-'));
    try {
      const file = join(dir, 'flotilla.db');
      const s = await openSqliteStore(file);
      const ids = await seed(s);
      expect((await Promise.all(ids.map((id) => s.getTask(id)))).map((t) => t?.pendingEvents)).toEqual([2, 0, 1]);
      await s.close();
      const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new BetterSqlite3(file) }) });
      try {
        expect(await redo(db, ids)).toEqual([2, 0, 1]);
      } finally {
        await db.destroy();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const pgDb = await createTestDatabase();
afterAll(async () => {
  await pgDb?.drop();
});

describe.skipIf(pgDb === null)('migration 0017: tasks.pending_events filled from the stored events (PostgreSQL)', () => {
  it('counts each task’s events no turn took', async () => {
    const s = await openPostgresStore(pgDb!.url);
    const ids = await seed(s);
    expect((await Promise.all(ids.map((id) => s.getTask(id)))).map((t) => t?.pendingEvents)).toEqual([2, 0, 1]);
    await s.close();
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: pgDb!.url, max: 1 }) }) });
    try {
      expect(await redo(db, ids)).toEqual([2, 0, 1]);
    } finally {
      await db.destroy();
    }
  });
});

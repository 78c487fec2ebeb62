import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../open.js';
import { createTestDatabase } from '../test-pg.js';

const pgDb = await createTestDatabase();
afterAll(async () => {
  await pgDb?.drop();
});

describe('migration 0025: the reservations expiry index is on PostgreSQL only', () => {
  it('SQLite: migrated store has no budget_reservations_expires; the sweep still finds expired reservations by a scan', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-0025-'));
    try {
      const s = await openStore({ dataDir: dir });
      const now = 1_000_000;
      const job = await s.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now });
      expect(await s.reserveBudget(job.id, 300_000, now, 60_000)).toMatchObject({ ok: true });
      expect(await s.releaseExpiredReservations(now + 60_000)).toEqual([{ rootId: job.id, releasedMicros: 300_000, chargedMicros: 300_000, count: 1 }]);
      await s.close();
      const db = new BetterSqlite3(join(dir, 'flotilla.db'), { readonly: true });
      try {
        const indexes = db.prepare("select name from sqlite_master where type = 'index' and tbl_name = 'budget_reservations' and name not like 'sqlite_%'").pluck().all();
        expect(indexes).toEqual([]);
        const plan = db.prepare('explain query plan select id from budget_reservations where expires_at <= ?').all(now) as { detail: string }[];
        expect(plan.map((p) => p.detail)).toEqual(['SCAN budget_reservations']);
      } finally {
        db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(pgDb === null)('PostgreSQL keeps it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-0025-pg-')); // not used with a databaseUrl
    const s = await openStore({ dataDir: dir, databaseUrl: pgDb!.url });
    await s.close();
    const c = new pg.Client({ connectionString: pgDb!.url });
    await c.connect();
    try {
      const r = await c.query("select indexname from pg_indexes where tablename = 'budget_reservations' and indexname = 'budget_reservations_expires'");
      expect(r.rows).toEqual([{ indexname: 'budget_reservations_expires' }]);
    } finally {
      await c.end();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

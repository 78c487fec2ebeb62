import { afterAll, describe, expect, it } from 'vitest';
import { PREPARE, PreparingClient } from './pg-prepared.js';
import { createTestDatabase } from './test-pg.js';

const db = await createTestDatabase();
afterAll(async () => {
  await db?.drop();
});

describe.skipIf(db === null)('PreparingClient (PostgreSQL)', () => {
  it('runs SQL marked PREPARE as one named prepared statement per text, other SQL as before', async () => {
    const c = new PreparingClient({ connectionString: db!.url });
    await c.connect();
    try {
      const marked = `${PREPARE} select $1::int + 1 as n`;
      expect((await c.query(marked, [1])).rows).toEqual([{ n: 2 }]);
      expect((await c.query(marked, [41])).rows).toEqual([{ n: 42 }]);
      expect((await c.query(`${PREPARE} select $1::text as t`, ['x'])).rows).toEqual([{ t: 'x' }]);
      expect((await c.query('select $1::int * 2 as n', [21])).rows).toEqual([{ n: 42 }]);
      // Two texts marked: two statements on this connection; the unmarked one is not among them.
      const prepared = await c.query<{ name: string; statement: string }>('select name, statement from pg_prepared_statements order by statement');
      expect(prepared.rows.map((r) => r.statement)).toEqual([marked, `${PREPARE} select $1::text as t`]);
      expect(prepared.rows.every((r) => /^flotilla_[0-9a-f]{24}$/.test(r.name))).toBe(true);
    } finally {
      await c.end();
    }
  });
});

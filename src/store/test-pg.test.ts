import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from './test-pg.js';

const saved = { url: process.env.FLOTILLA_TEST_PG_URL, ci: process.env.CI };
afterEach(() => {
  for (const [k, v] of [['FLOTILLA_TEST_PG_URL', saved.url], ['CI', saved.ci]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

describe('createTestDatabase', () => {
  it('unreachable server: null outside CI, an error under CI=true', async () => {
    process.env.FLOTILLA_TEST_PG_URL = 'postgres://postgres:pw-secret@127.0.0.1:1/postgres';
    delete process.env.CI;
    expect(await createTestDatabase()).toBeNull();
    process.env.CI = 'true';
    const err = await createTestDatabase().then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/unreachable at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/postgres and CI=true/);
    expect(err?.message).not.toContain('pw-secret');
  });

  it('creates a fresh empty database and drops it', async () => {
    const t = await createTestDatabase();
    if (t === null) {
      expect(process.env.CI).not.toBe('true');
      return; // no PostgreSQL here (and not CI): nothing to check
    }
    const name = new URL(t.url).pathname.slice(1);
    expect(name).toMatch(new RegExp(`^flotilla_t_${process.pid}_[0-9a-f]{8}$`));
    const c = new pg.Client({ connectionString: t.url });
    await c.connect();
    const { rows } = await c.query<{ n: string }>(`select count(*) as n from information_schema.tables where table_schema = 'public'`);
    await c.end();
    expect(rows[0]?.n).toBe('0');
    await t.drop();
    const admin = new pg.Client({ connectionString: process.env.FLOTILLA_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres' });
    await admin.connect();
    const left = await admin.query('select 1 from pg_database where datname = $1', [name]);
    await admin.end();
    expect(left.rowCount).toBe(0);
  });
});

import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { runStoreConformance } from './conformance.js';
import { openStore } from './open.js';
import { openPostgresStore } from './postgres.js';
import { createTestDatabase } from './test-pg.js';
import type { Store } from './types.js';

// One database for this file; each conformance test gets its own schema in it (a fresh store).
const db = await createTestDatabase();
afterAll(async () => {
  await db?.drop();
});

const schemaOf = new WeakMap<Store, string>();
let n = 0;

describe.skipIf(db === null)('PostgreSQL (FLOTILLA_TEST_PG_URL)', () => {
  runStoreConformance(
    'store conformance: PostgreSQL',
    async () => {
      const schema = `t${++n}`;
      const s = await openPostgresStore(db!.url, { schema, maxConnections: 4 });
      schemaOf.set(s, schema);
      return s;
    },
    {
      // A second server process: its own pool on the same data.
      another: async (s) => openPostgresStore(db!.url, { schema: schemaOf.get(s)!, maxConnections: 2 }),
    },
  );

  it('openStore with databaseUrl: PostgreSQL, migrated once even when several open at once; no data folder used', async () => {
    const dataDir = path.join(os.tmpdir(), `flotilla-pg-unused-${process.pid}`);
    const stores = await Promise.all([1, 2, 3].map(() => openStore({ databaseUrl: db!.url, dataDir })));
    try {
      expect(stores.map((s) => s.dialect)).toEqual(['postgres', 'postgres', 'postgres']);
      expect(fs.existsSync(dataDir)).toBe(false);
      const j = await stores[0]!.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 0, now: 1 });
      expect((await stores[2]!.getJob(j.id))?.agent).toBe('a');
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('an unreachable server gives an error without the password', async () => {
    const err = await openPostgresStore('postgres://flotilla:s3cret-pw@127.0.0.1:1/nope').then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/cannot open PostgreSQL at postgres:\/\/flotilla:\*\*\*@127\.0\.0\.1:1\/nope/);
    expect(err?.message).not.toContain('s3cret-pw');
  });
});

// Issue 5, security finding 1a: labels given at registration-token creation are binding — a
// runner's own labels (at registration and at every hello) may only add keys the token did
// not set. Real server, real WebSockets, SQLite and PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job, RunnerDetail } from '../src/protocol/index.js';
import { createTestDatabase } from '../src/store/test-pg.js';
import { FakeRunner, startTestServer, type TestServer } from '../src/server/test-helpers.js';

const pg = await createTestDatabase();
afterAll(async () => {
  await pg?.drop();
});

describe.each([['sqlite', null], ...(pg ? [['postgres', pg.url]] : [])] as Array<[string, string | null]>)('token labels bind (%s)', (_d, databaseUrl) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 100, ...(databaseUrl ? { databaseUrl } : {}) });
  });
  afterAll(() => t.close());

  const runnerView = async (id: number) => ((await (await t.api(`/api/runners/${id}`)).json()) as RunnerDetail).runner;

  it('a runner cannot override or drop its token labels, only add keys', async () => {
    // Registered with its own labels that try to override `os` and add `extra`.
    const r = await FakeRunner.start(t, { name: 'bound', tokenLabels: { pool: 'gpu', os: 'linux' }, labels: { os: 'mac', extra: 'x' } });
    try {
      expect((await runnerView(r.runnerId)).labels).toEqual({ pool: 'gpu', os: 'linux', extra: 'x' });
      const row = await t.store.getRunner(r.runnerId);
      expect(row?.boundLabels).toEqual({ pool: 'gpu', os: 'linux' });

      // At hello it tries again: overrides pool and os, drops them, adds `cpu`.
      const welcome = await r.hello({ name: 'bound', labels: { pool: 'cpu', os: 'windows', cpu: 'arm' } });
      expect((await runnerView(r.runnerId)).labels).toEqual({ pool: 'gpu', os: 'linux', cpu: 'arm' });
      // The welcome says which of its labels were not taken, so the runner can tell its user.
      expect(welcome.ignoredLabels).toEqual([
        { key: 'pool', asked: 'cpu', bound: 'gpu' },
        { key: 'os', asked: 'windows', bound: 'linux' },
      ]);

      // Routing follows the bound labels: a job for os=windows never goes there; pool=gpu does.
      const win = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { os: 'windows' } } })).json()) as Job;
      expect(await r.none('job.assign', 600)).toBe(true);
      expect((await t.store.getJob(win.id))?.status).toBe('queued');
      await t.store.transitionJob(win.id, null, ['queued'], 'cancelled', Date.now());
      const gpu = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { pool: 'gpu', os: 'linux' } } })).json()) as Job;
      const a = await r.next('job.assign');
      expect(a.assignment.jobId).toBe(gpu.id);
    } finally {
      await r.close();
    }
  });

  it('a hello with no labels keeps the token labels (they cannot be dropped)', async () => {
    const r = await FakeRunner.start(t, { name: 'empty', tokenLabels: { zone: 'eu' } });
    try {
      expect((await r.hello({ name: 'empty', labels: {} })).ignoredLabels).toBeUndefined();
      expect((await runnerView(r.runnerId)).labels).toEqual({ zone: 'eu' });
    } finally {
      await r.close();
    }
  });

  it('without token labels the runner labels itself freely', async () => {
    const r = await FakeRunner.start(t, { name: 'free', labels: { a: '1' } });
    try {
      await r.hello({ name: 'free', labels: { a: '2', b: '3' } });
      expect((await runnerView(r.runnerId)).labels).toEqual({ a: '2', b: '3' });
    } finally {
      await r.close();
    }
  });
});

/**
 * `GET /api/costs?root=ID` names what is wrong with ID (over a real server and SQLite store):
 * a job that does not exist → 404; a job that is not its tree's root → 400 naming the root
 * (a tree's calls are counted under its root, so an empty rollup would read as "spent
 * nothing", as `flotilla costs --root CHILD` printed before); the root itself → its rollup.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './test-helpers.js';

describe('GET /api/costs?root=', () => {
  let t: TestServer;
  let root: number;
  let child: number;
  beforeAll(async () => {
    t = await startTestServer();
    const now = Date.now();
    root = (await t.store.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now })).id;
    child = (await t.store.createJob({ parentId: root, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 0, now })).id;
  });
  afterAll(() => t.close());

  it('a child job: 400 naming its tree\'s root', async () => {
    const res = await t.api(`/api/costs?root=${child}`);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; field: string; message: string } };
    expect(body.error).toMatchObject({ code: 'invalid_request', field: 'root' });
    expect(body.error.message).toBe(`root: job ${child} is not a tree's root: its calls are counted under its tree's root, job ${root}`);
  });

  it('no such job: 404', async () => {
    const res = await t.api('/api/costs?root=999999');
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it('the root: its rollup (no calls yet)', async () => {
    const res = await t.api(`/api/costs?root=${root}&by=job`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { rows: unknown[] }).rows).toEqual([]);
  });
});

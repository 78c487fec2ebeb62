/**
 * `GET /api/jobs?from=&to=`: bounds on createdAt, from inclusive, to exclusive; a range that is
 * empty by construction (from not before to) is refused naming `from`, not answered with no jobs
 * (fresh-tester finding: from after to listed nothing, without a word).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './test-helpers.js';

let t: TestServer;
const DAY = Date.UTC(2026, 10, 20); // 2026-11-20T00:00:00Z
const ids: number[] = [];
beforeAll(async () => {
  t = await startTestServer({});
  // created the day before, at midnight, at noon, and the next midnight
  for (const at of [DAY - 1, DAY, DAY + 12 * 3_600_000, DAY + 86_400_000]) {
    const j = await t.store.createJob({ parentId: null, agent: 'gpu-job', agentVersion: '3', input: {}, selector: { pool: 'nowhere' }, priority: 0, budgetMicros: 1_000, now: at });
    ids.push(j.id);
  }
});
afterAll(async () => {
  await t.close();
});

const list = async (q: string): Promise<[number, unknown]> => {
  const res = await t.api(`/api/jobs?${q}`);
  const body = (await res.json()) as { jobs?: Array<{ id: number }> };
  return [res.status, body.jobs ? body.jobs.map((j) => j.id) : body];
};

describe('GET /api/jobs from/to', () => {
  it('from inclusive, to exclusive, newest first', async () => {
    expect(await list('from=2026-11-20&to=2026-11-21')).toEqual([200, [ids[2], ids[1]]]);
    expect(await list('from=2026-11-20T00:00:00.001Z')).toEqual([200, [ids[3], ids[2]]]);
    expect(await list('to=2026-11-20')).toEqual([200, [ids[0]]]);
  });

  it('from not before to is refused naming from', async () => {
    for (const q of ['from=2026-11-21&to=2026-11-20', 'from=2026-11-20&to=2026-11-20']) {
      const [status, body] = await list(q);
      expect(status).toBe(400);
      expect(body).toMatchObject({ error: { code: 'invalid_request', field: 'from' } });
      expect((body as { error: { message: string } }).error.message).toMatch(/^from: must be before to \(to is exclusive\)/);
    }
  });
});

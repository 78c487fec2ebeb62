/**
 * Ids above 2,147,483,647 (PostgreSQL `integer`, protocol/ids.ts MAX_ID) in a path, a query or
 * a body: 400 `invalid_request` naming the field and the range on both engines, where
 * PostgreSQL answered 500 `internal` ("value out of range for type integer") and SQLite 404.
 * 2,147,483,647 itself is a valid id: 404 for one that does not exist.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiErrorBody } from '../protocol/index.js';
import { createTestDatabase } from '../store/test-pg.js';
import { startTestServer, type TestServer } from './test-helpers.js';

const pg = await createTestDatabase();

const RANGE = 'must be an integer from 1 to 2147483647';
const BIG = '2147483648';
const MAX = '2147483647';

/** [method, path, body, field, what the id names]: each answered 400 for the id BIG. */
type Case = [string, string, unknown, string, string];
const cases = (big: string): Case[] => [
  ['DELETE', `/api/tokens/${big}`, undefined, 'id', 'an API token id'],
  ['GET', `/api/jobs/${big}`, undefined, 'id', 'a job id'],
  ['GET', `/api/jobs/${big}/tree`, undefined, 'id', 'a job id'],
  ['GET', `/api/jobs/${big}/events/page`, undefined, 'id', 'a job id'],
  ['GET', `/api/jobs/${big}/events`, undefined, 'id', 'a job id'],
  ['POST', `/api/jobs/${big}/cancel`, undefined, 'id', 'a job id'],
  ['GET', `/api/jobs/${big}/budget`, undefined, 'id', 'a job id'],
  ['POST', `/api/jobs/${big}/budget`, { addUsd: 1 }, 'id', 'a job id'],
  ['POST', `/api/jobs/${big}/start`, {}, 'id', 'a job id'],
  ['GET', `/api/runners/${big}`, undefined, 'id', 'a runner id'],
  ['GET', `/api/runners/${big}/activity`, undefined, 'id', 'a runner id'],
  ['POST', `/api/runners/${big}/hold`, { for: '1h', reason: 'x' }, 'id', 'a runner id'],
  ['POST', `/api/runners/${big}/resume`, undefined, 'id', 'a runner id'],
  ['POST', `/api/runners/${big}/revoke`, undefined, 'id', 'a runner id'],
  ['PATCH', `/api/runners/${big}`, { capacity: 2 }, 'id', 'a runner id'],
  ['GET', `/api/tasks/${big}`, undefined, 'id', 'a task id'],
  ['POST', `/api/tasks/${big}/send`, { prompt: 'hi' }, 'id', 'a task id'],
  ['GET', `/api/tasks/${big}/conversation`, undefined, 'id', 'a task id'],
  ['GET', `/api/receivers/${big}`, undefined, 'id', 'a receiver id'],
  ['DELETE', `/api/receivers/${big}`, undefined, 'id', 'a receiver id'],
  ['GET', `/api/jobs?runner=${big}`, undefined, 'runner', 'a runner id'],
  ['GET', `/api/jobs?before=${big}`, undefined, 'before', 'a job id'],
  ['GET', `/api/tasks?before=${big}`, undefined, 'before', 'a task id'],
  ['GET', `/api/costs?root=${big}`, undefined, 'root', 'a job id'],
];

async function send(t: TestServer, method: string, path: string, body: unknown): Promise<Response> {
  return body === undefined ? t.api(path, { method }) : t.api(path, { method, json: body });
}

async function errorOf(res: Response): Promise<[number, string, string, string | undefined]> {
  const e = ((await res.json()) as ApiErrorBody).error;
  return [res.status, e.code, e.message, e.field];
}

for (const engine of ['sqlite', 'postgresql'] as const) {
  describe.skipIf(engine === 'postgresql' && pg === null)(`ids out of range on ${engine}`, () => {
    let t: TestServer;
    let jobId: number;
    beforeAll(async () => {
      t = await startTestServer(engine === 'postgresql' ? { databaseUrl: pg!.url } : {});
      const res = await t.api('/api/jobs', { json: { agent: 'gpu-job', input: { n: 1 } } });
      expect(res.status).toBe(201);
      jobId = ((await res.json()) as { id: number }).id;
    });
    afterAll(async () => {
      await t?.close();
      if (engine === 'postgresql') await pg?.drop();
    });

    it('an id of 2147483648 in a path or query → 400 invalid_request naming the field and the range', async () => {
      const got: unknown[] = [];
      const want: unknown[] = [];
      for (const [method, path, body, field, what] of cases(BIG)) {
        got.push([method, path, ...(await errorOf(await send(t, method, path, body)))]);
        want.push([method, path, 400, 'invalid_request', `${field}: ${RANGE} (${what})`, field]);
      }
      expect(got).toEqual(want);
    });

    it('2^53 - 1 and 0 are refused the same way; a 16-digit id too', async () => {
      for (const big of ['9007199254740991', '0', '12345678901234567']) {
        expect(await errorOf(await t.api(`/api/jobs/${big}`))).toEqual([400, 'invalid_request', `id: ${RANGE} (a job id)`, 'id']);
        expect(await errorOf(await t.api(`/api/runners/${big}`))).toEqual([400, 'invalid_request', `id: ${RANGE} (a runner id)`, 'id']);
      }
    });

    it('2147483647 is a valid id: 404 for one that does not exist', async () => {
      for (const [method, path, body] of cases(MAX)) {
        if (path.includes('?')) continue; // queries: an empty result, below
        const res = await send(t, method, path, body);
        expect([method, path, res.status]).toEqual([method, path, 404]);
        await res.body?.cancel();
      }
      for (const q of [`runner=${MAX}`, `before=${MAX}`]) {
        const res = await t.api(`/api/jobs?${q}`);
        expect(res.status).toBe(200);
        const ids = ((await res.json()) as { jobs: { id: number }[] }).jobs.map((j) => j.id);
        expect([q, ids]).toEqual([q, q.startsWith('before') ? [jobId] : []]);
      }
    });

    it('cursors: an event seq above the range → 400 naming before / after; the job itself still reads', async () => {
      expect(await errorOf(await t.api(`/api/jobs/${jobId}/events/page?before=${BIG}`))).toEqual([400, 'invalid_request', `before: ${RANGE} (an event seq)`, 'before']);
      expect(await errorOf(await t.api(`/api/jobs/${jobId}/events?after=${BIG}`))).toEqual([
        400,
        'invalid_request',
        'Last-Event-ID / after: must be an integer from 0 to 2147483647 (an event seq)',
        'after',
      ]);
      // before the largest seq: every event, as the page without before (the newest) reads them.
      const seqs = async (q: string) => {
        const page = await t.api(`/api/jobs/${jobId}/events/page${q}`);
        expect(page.status).toBe(200);
        return ((await page.json()) as { events: { seq: number }[] }).events.map((e) => e.seq);
      };
      const all = await seqs('');
      expect(all[0]).toBe(1);
      expect(await seqs(`?before=${MAX}`)).toEqual(all);
    });

    it('ids in a body above the range → 400 naming the field: resumeJobId, runnerId, fallbackTaskId', async () => {
      expect(await errorOf(await t.api('/api/jobs', { json: { agent: 'gpu-job', input: { n: 1 }, resumeJobId: 2147483648 } }))).toEqual([
        400,
        'invalid_request',
        `resumeJobId: ${RANGE}`,
        'resumeJobId',
      ]);
      expect(await errorOf(await t.api('/api/jobs', { json: { agent: 'gpu-job', input: { n: 1 }, resumeJobId: 1e20 } }))).toEqual([
        400,
        'invalid_request',
        `resumeJobId: ${RANGE}`,
        'resumeJobId',
      ]);
      expect(await errorOf(await t.api(`/api/jobs/${jobId}/start`, { json: { runnerId: 2147483648 } }))).toEqual([400, 'invalid_request', `runnerId: ${RANGE}`, 'runnerId']);
      expect(await errorOf(await t.api('/api/receivers', { json: { name: 'r1', provider: 'github', fallbackTaskId: 2147483648 } }))).toEqual([
        400,
        'invalid_request',
        `fallbackTaskId: ${RANGE}`,
        'fallbackTaskId',
      ]);
      // The largest id is a valid one: the resumed job does not exist.
      expect(await errorOf(await t.api('/api/jobs', { json: { agent: 'gpu-job', input: { n: 1 }, resumeJobId: 2147483647 } }))).toEqual([
        404,
        'unknown_job',
        'job 2147483647 does not exist',
        'resumeJobId',
      ]);
    });
  });
}

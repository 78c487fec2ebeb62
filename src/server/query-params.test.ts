/**
 * Query parameters of the API's GET/DELETE endpoints (http-util.ts unknownQueryParam): an
 * unknown one and one given twice are refused with 400 `invalid_request` naming it, never
 * ignored or read as the first of two (fresh-user finding: `GET /api/costs?by=job&by=tree`
 * answered by job, `?foo=bar` was ignored). Real server, real HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './test-helpers.js';

describe('query parameters', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => {
    await t.close();
  });

  /** Status and error body of `method path` with the admin token. */
  const call = async (path: string, method = 'GET') => {
    const res = await t.api(path, { method });
    return { status: res.status, body: (await res.json()) as { error?: { code: string; message: string; field?: string } } };
  };

  it.each([
    ['GET', '/api/costs?by=job&by=tree', 'by: given 2 times; give it once', 'by'],
    ['GET', '/api/costs?since=7d&since=1d&since=2d', 'since: given 3 times; give it once', 'since'],
    ['GET', '/api/costs?since=7d%20', 'since: must be like 7d, 12h, 30m, 2w or an ISO-8601 date', 'since'],
    ['GET', '/api/costs?foo=bar', 'foo: unknown query parameter (this endpoint takes by, since, root)', 'foo'],
    ['GET', '/api/runners?labels=os=linux', 'labels: unknown query parameter (this endpoint takes label, role, status)', 'labels'],
    ['GET', '/api/runners?status=online&status=busy', 'status: given 2 times; give it once', 'status'],
    ['GET', '/api/agents/versions?agent=x', 'agent: unknown query parameter (this endpoint takes name)', 'agent'],
    ['GET', '/api/jobs?limit=5&limit=50', 'limit: given 2 times; give it once', 'limit'],
    ['DELETE', '/api/gateway/routes?pattern=a&pattern=b', 'pattern: given 2 times; give it once', 'pattern'],
    ['DELETE', '/api/gateway/prices?name=m', 'name: unknown query parameter (this endpoint takes model)', 'name'],
  ])('%s %s → 400 naming it', async (method, path, message, field) => {
    expect(await call(path, method)).toEqual({ status: 400, body: { error: { code: 'invalid_request', message, field } } });
  });

  it('an unknown name of 3,000 characters is cut in the message and the field', async () => {
    const name = 'q'.repeat(3000);
    const { status, body } = await call(`/api/costs?${name}=1`);
    expect(status).toBe(400);
    expect(body.error!.field).toBe(`${'q'.repeat(100)}… (3000 characters)`);
    expect(body.error!.message).toBe(`${'q'.repeat(100)}… (3000 characters): unknown query parameter (this endpoint takes by, since, root)`);
  });

  it('the same endpoints answer as before with known parameters, each once', async () => {
    const costs = await call('/api/costs?by=job&since=7d');
    expect(costs.status).toBe(200);
    expect((costs.body as unknown as { by: string }).by).toBe('job');
    expect((await call('/api/runners?status=online')).status).toBe(200);
    expect((await call('/api/agents/versions?name=x')).status).toBe(200);
    expect((await call('/api/gateway/prices?model=never-set', 'DELETE')).status).toBe(404);
  });
});

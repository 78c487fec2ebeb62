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
    ['GET', '/api/costs?since=7d%20', 'since: must be like 30m, 12h, 7d, 2w (1 to 6 digits) or an ISO-8601 date or date-time, UTC unless it gives an offset (e.g. 2026-11-01, 2026-11-01T09:00+02:00), not before 1970', 'since'],
    // past 1970 it was read as 1970 (fresh-tester finding); 7 digits were refused without saying why
    ['GET', '/api/costs?since=100000w', 'since: must be like 30m, 12h, 7d, 2w (1 to 6 digits) or an ISO-8601 date or date-time, UTC unless it gives an offset (e.g. 2026-11-01, 2026-11-01T09:00+02:00), not before 1970', 'since'],
    ['GET', '/api/costs?since=1969-12-31', 'since: must be like 30m, 12h, 7d, 2w (1 to 6 digits) or an ISO-8601 date or date-time, UTC unless it gives an offset (e.g. 2026-11-01, 2026-11-01T09:00+02:00), not before 1970', 'since'],
    ['GET', '/api/costs?since=9999999d', 'since: must be like 30m, 12h, 7d, 2w (1 to 6 digits) or an ISO-8601 date or date-time, UTC unless it gives an offset (e.g. 2026-11-01, 2026-11-01T09:00+02:00), not before 1970', 'since'],
    ['GET', '/api/costs?foo=bar', 'foo: unknown query parameter (this endpoint takes by, since, root)', 'foo'],
    ['GET', '/api/runners?labels=os=linux', 'labels: unknown query parameter (this endpoint takes label, role, status)', 'labels'],
    ['GET', '/api/runners?status=online&status=busy', 'status: given 2 times; give it once', 'status'],
    ['GET', '/api/agents/versions?agent=x', 'agent: unknown query parameter (this endpoint takes name)', 'agent'],
    ['GET', '/api/jobs?limit=5&limit=50', 'limit: given 2 times; give it once', 'limit'],
    ['DELETE', '/api/gateway/routes?pattern=a&pattern=b', 'pattern: given 2 times; give it once', 'pattern'],
    ['DELETE', '/api/gateway/prices?name=m', 'name: unknown query parameter (this endpoint takes model)', 'name'],
    // a route that declares none takes none (query-rule.ts: fresh-user finding, they were ignored)
    ['GET', '/api/agents?bogus=1', 'bogus: unknown query parameter (this endpoint takes none)', 'bogus'],
    ['GET', '/api/gateway/routes?x=1', 'x: unknown query parameter (this endpoint takes none)', 'x'],
    ['DELETE', '/api/tokens/999?force=1', 'force: unknown query parameter (this endpoint takes none)', 'force'],
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

  it("a job's own routes take none; the events stream takes after, once", async () => {
    const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { pool: 'nobody' } } })).json()) as { id: number };
    expect(await call(`/api/jobs/${job.id}?bogus=1`)).toEqual({ status: 400, body: { error: { code: 'invalid_request', message: 'bogus: unknown query parameter (this endpoint takes none)', field: 'bogus' } } });
    expect(await call(`/api/jobs/${job.id}/events?after=1&after=2`)).toEqual({ status: 400, body: { error: { code: 'invalid_request', message: 'after: given 2 times; give it once', field: 'after' } } });
    expect((await call(`/api/jobs/${job.id}/tree`)).status).toBe(200);
    expect((await t.api(`/api/jobs/${job.id}?`)).status).toBe(200);
    // no route: the 404 as before
    expect((await call('/api/nothing-here?x=1')).status).toBe(404);
  });

  it('an unknown body field is named in field, at the top level and nested', async () => {
    const top = await t.api('/api/gateway/routes', { method: 'PUT', json: { pattern: 'foo', provider: 'anthropic', extra: 1 } });
    expect(top.status).toBe(400);
    expect(await top.json()).toEqual({ error: { code: 'invalid_request', message: 'Unrecognized key: "extra"', field: 'extra' } });
    const nested = await t.api('/api/gateway/prices', { method: 'PUT', json: { model: 'm1', price: { input: 1, output: 2, foo: 3 } } });
    expect(nested.status).toBe(400);
    expect(((await nested.json()) as { error: { field: string } }).error.field).toBe('price.foo');
    expect(await t.store.listModelRoutes()).toEqual([]);
  });

  it('a number past ±1.8e308 anywhere in a body is refused naming it, never stored as null', async () => {
    const before = (await t.store.listJobs({ limit: 1000 })).length;
    const res = await t.api('/api/jobs', { method: 'POST', body: '{"agent":"test-fixer","input":{"repo":"x","x":{"y":[1,1e400]}}}', headers: { 'content-type': 'application/json' } });
    expect([res.status, await res.json()]).toEqual([400, { error: { code: 'invalid_request', message: 'input.x.y.1: number out of range (JSON numbers beyond ±1.8e308 cannot be read)', field: 'input.x.y.1' } }]);
    expect((await t.store.listJobs({ limit: 1000 })).length).toBe(before);
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

/**
 * Actions that take no fields (cancel a job, revoke a registration token, suspend/resume/stop/
 * complete a task) read their body as the runner actions do (routes/empty-body.ts): none, or
 * `{}`; anything else is refused 400 naming it, and the action does not happen. They ignored
 * their body (fresh-user finding: `{"reason":"x","reason":"y","bogus":1}` cancelled the job).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../protocol/index.js';
import { startTestServer, type TestServer } from './test-helpers.js';

describe('body-less actions refuse a body with fields', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => t?.close());

  const post = (path: string, body?: string) => t.api(path, { method: 'POST', headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body }) });

  it('POST /api/jobs/:id/cancel: {"bogus":1} and a repeated key are refused, the job untouched; {} and no body cancel it', async () => {
    const a = (await (await t.api('/api/jobs', { json: { agent: 'gpu-job', input: { n: 1 } } })).json()) as Job;
    const b = (await (await t.api('/api/jobs', { json: { agent: 'gpu-job', input: { n: 2 } } })).json()) as Job;
    const bogus = await post(`/api/jobs/${a.id}/cancel`, '{"reason":"x","bogus":1}');
    expect([bogus.status, ((await bogus.json()) as { error: { code: string; field?: string } }).error]).toMatchObject([400, { code: 'invalid_request', field: 'reason' }]);
    expect(((await (await t.api(`/api/jobs/${a.id}`)).json()) as Job).status).toBe('queued');
    expect((await post(`/api/jobs/${a.id}/cancel`, '{}')).status).toBe(200);
    expect((await post(`/api/jobs/${b.id}/cancel`)).status).toBe(200);
    expect(((await (await t.api(`/api/jobs/${b.id}`)).json()) as Job).status).toBe('cancelled');
  });

  it('POST /api/runner-tokens/:id/revoke: a body with fields is refused and the token stays usable; none revokes it', async () => {
    const created = (await (await t.api('/api/runner-tokens', { json: { labels: {} } })).json()) as { id: number };
    const bad = await post(`/api/runner-tokens/${created.id}/revoke`, '{"a":1,"a":2}');
    expect(bad.status).toBe(400);
    const list = (await (await t.api('/api/runner-tokens')).json()) as { tokens: Array<{ id: number }> };
    expect(list.tokens.map((x) => x.id)).toContain(created.id);
    expect((await post(`/api/runner-tokens/${created.id}/revoke`)).status).toBe(200);
  });
});

describe('DELETE routes and sign-out take no fields', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => t?.close());

  it('DELETE /api/tokens/:id with {"keep":true} is refused and the token keeps working; with no body it is revoked; POST /api/session/logout likewise', async () => {
    // fresh-user finding: the body was ignored and the token revoked
    const made = (await (await t.api('/api/tokens', { json: { name: 'ci', role: 'member' } })).json()) as { id: number; token: string };
    const bad = await t.api(`/api/tokens/${made.id}`, { method: 'DELETE', headers: { 'content-type': 'application/json' }, body: '{"keep":true}' });
    expect([bad.status, ((await bad.json()) as { error: { field?: string } }).error.field]).toEqual([400, 'keep']);
    expect((await t.api('/api/jobs', { token: made.token })).status).toBe(200);
    const del = await t.api(`/api/tokens/${made.id}`, { method: 'DELETE' });
    expect([del.status, del.status === 204 ? '' : await del.text()]).toEqual([204, '']);
    expect((await t.api('/api/jobs', { token: made.token })).status).toBe(401);
    const out = await t.api('/api/session/logout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"x":1}' });
    expect(out.status).toBe(400);
    const bye = await t.api('/api/session/logout', { method: 'POST' });
    expect([bye.status, bye.status === 204 ? '' : await bye.text()]).toEqual([204, '']);
  });
});

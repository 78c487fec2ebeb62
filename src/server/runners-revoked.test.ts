// Over real HTTP: a revoked runner reads `revoked` (not a plain `offline`) in the list, the
// detail and the revoke reply, and `?status=revoked` finds it; `resume` and `revoke` take no
// body or `{}` only, anything else is a 400 naming the problem, with nothing changed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runner, RunnerDetail, RunnerList } from '../protocol/index.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

type ErrorBody = { error: { code: string; message: string; field?: string } };

describe('revoked runners and bodyless runner actions', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 200 });
  });
  afterAll(() => t.close());

  const register = async (name: string) => {
    const res = await t.api('/api/runners/register', { token: null, json: { token: await t.regToken(), name } });
    expect(res.status).toBe(201);
    return (await res.json()) as { runnerId: number; credential: string };
  };
  const list = async (q = '') => ((await (await t.api(`/api/runners${q}`)).json()) as RunnerList).runners.map((r) => [r.name, r.status]);

  it('a revoked runner is `revoked` in the revoke reply, the list and the detail; ?status=revoked lists only those, ?status=offline not them', async () => {
    const live = await register('keeps-going');
    const r = await FakeRunner.connect(t.url, live.runnerId, live.credential);
    await r.hello({ name: 'keeps-going' });
    await register('never-connected');
    const gone = await register('gone-for-good');
    const res = await t.api(`/api/runners/${gone.runnerId}/revoke`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect((await res.json()) as Runner).toMatchObject({ name: 'gone-for-good', status: 'revoked', revokedAt: expect.any(String) });
    expect(await list()).toEqual([
      ['keeps-going', 'online'],
      ['never-connected', 'offline'],
      ['gone-for-good', 'revoked'],
    ]);
    expect(await list('?status=revoked')).toEqual([['gone-for-good', 'revoked']]);
    expect(await list('?status=offline')).toEqual([['never-connected', 'offline']]);
    expect(((await (await t.api(`/api/runners/${gone.runnerId}`)).json()) as RunnerDetail).runner.status).toBe('revoked');
    const bad = await t.api('/api/runners?status=gone');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as ErrorBody).error).toEqual({
      code: 'invalid_request',
      message: 'status: must be one of online, busy, on_hold, provisioning, updating, offline, revoked',
      field: 'status',
    });
    // The OpenAPI text has the status in the Runner schema and the list's filter.
    const spec = (await (await t.api('/openapi.json')).json()) as { paths: Record<string, { get?: { parameters?: Array<{ name: string; schema: { enum?: string[] } }> } }>; components: { schemas: Record<string, { properties: Record<string, { enum?: string[] }> }> } };
    expect(spec.components.schemas.Runner!.properties.status!.enum).toContain('revoked');
    expect(spec.paths['/api/runners']!.get!.parameters!.find((p) => p.name === 'status')!.schema.enum).toContain('revoked');
    await r.close();
  });

  it('resume and revoke take no body or {}; anything else is a 400 naming the problem, and changes nothing', async () => {
    const { runnerId } = await register('picky');
    const hold = await t.api(`/api/runners/${runnerId}/hold`, { json: { for: '1h', reason: 'maintenance' } });
    expect(hold.status).toBe(200);
    const post = (action: string, body: string | undefined) =>
      t.api(`/api/runners/${runnerId}/${action}`, { method: 'POST', ...(body !== undefined ? { body, headers: { 'content-type': 'application/json' } } : {}) });
    for (const action of ['resume', 'revoke']) {
      const cases: Array<[string, number, Partial<ErrorBody['error']>]> = [
        ['{"force":true}', 400, { code: 'invalid_request', message: 'Unrecognized key: "force": this request takes no fields; send no body or {}', field: 'force' }],
        ['{"a":1,"b":2}', 400, { code: 'invalid_request', message: 'Unrecognized keys: "a", "b": this request takes no fields; send no body or {}', field: 'a' }],
        ['[]', 400, { code: 'invalid_request', message: 'Invalid input: expected object, received array: this request takes no fields; send no body or {}' }],
        ['null', 400, { code: 'invalid_request', message: 'Invalid input: expected object, received null: this request takes no fields; send no body or {}' }],
        ['not json', 400, { code: 'invalid_json', message: 'request body must be empty or the JSON document {}' }],
      ];
      for (const [body, status, error] of cases) {
        const res = await post(action, body);
        expect([action, body, res.status]).toEqual([action, body, status]);
        expect(((await res.json()) as ErrorBody).error).toEqual(error);
      }
      // Nothing changed: still held, not revoked.
      expect((await t.store.getRunner(runnerId))?.hold).not.toBeNull();
      expect((await t.store.getRunner(runnerId))?.revokedAt).toBeNull();
    }
    // {} and no body at all are fine.
    expect((await post('resume', '{}')).status).toBe(200);
    expect((await t.store.getRunner(runnerId))?.hold).toBeNull();
    expect((await post('resume', undefined)).status).toBe(200);
    const revoked = await post('revoke', ' {} ');
    expect(revoked.status).toBe(200);
    expect(((await revoked.json()) as Runner).status).toBe('revoked');
    expect((await post('revoke', undefined)).status).toBe(200);
  });
});

// `POST /api/runners/{id}/update` over real HTTP with fake runners on real WebSockets: body
// validation (400 naming the field, nothing changed), 404/409 (revoked, offline), a member is
// refused; a connected runner gets `runner.update` (the server's version when none is given),
// reads `updating`, gets no job while updating, and takes jobs again after it reports `failed`.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job, RunnerActivity, RunnerList, UpdateRunnerResponse } from '../protocol/index.js';
import { FakeRunner, startTestServer, type TestServer } from './test-helpers.js';

type ErrorBody = { error: { code: string; message: string; field?: string } };

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('POST /api/runners/{id}/update', () => {
  let t: TestServer;
  const fakes: FakeRunner[] = [];
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 100 });
  });
  afterAll(async () => {
    for (const f of fakes) await f.close();
    await t.close();
  });

  const connect = async (name: string, labels: Record<string, string> = {}) => {
    const r = await FakeRunner.start(t, { name, labels });
    fakes.push(r);
    await r.hello({ name, labels });
    return r;
  };
  const update = (id: number, body?: string) => t.api(`/api/runners/${id}/update`, { method: 'POST', ...(body !== undefined ? { body, headers: { 'content-type': 'application/json' } } : {}) });
  const status = async (name: string) => ((await (await t.api('/api/runners')).json()) as RunnerList).runners.find((r) => r.name === name)?.status;

  it('a bad body is a 400 naming the field, and nothing is sent', async () => {
    const r = await connect('upd-bad');
    const cases: Array<[string, number, string, string | undefined]> = [
      ['{"version": "1.0 && rm -rf /"}', 400, 'invalid_request', 'version'],
      ['{"version": ""}', 400, 'invalid_request', 'version'],
      ['{"version": 2}', 400, 'invalid_request', 'version'],
      ['{"force": true}', 400, 'invalid_request', 'force'],
      ['[]', 400, 'invalid_request', undefined],
      ['not json', 400, 'invalid_json', undefined],
    ];
    for (const [body, code, err, field] of cases) {
      const res = await update(r.runnerId, body);
      expect([body, res.status]).toEqual([body, code]);
      const e = (await res.json()) as ErrorBody;
      expect([body, e.error.code, e.error.field]).toEqual([body, err, field]);
    }
    expect(((await (await update(r.runnerId, '{"version": "1.0 && rm -rf /"}')).json()) as ErrorBody).error.message).toMatch(/^version: a version must be 1-100 characters/);
    expect(await r.none('runner.update', 300)).toBe(true);
    expect(await status('upd-bad')).toBe('online');
  });

  it('unknown → 404; revoked → 409 revoked; offline → 409 offline; a member → 403', async () => {
    expect((await update(999_999, '{}')).status).toBe(404);
    const reg = async (name: string) => ((await (await t.api('/api/runners/register', { token: null, json: { token: await t.regToken(), name } })).json()) as { runnerId: number }).runnerId;
    const gone = await reg('upd-gone');
    await t.api(`/api/runners/${gone}/revoke`, { method: 'POST' });
    const revoked = await update(gone);
    expect(revoked.status).toBe(409);
    expect(((await revoked.json()) as ErrorBody).error.code).toBe('revoked');
    const away = await reg('upd-away');
    const offline = await update(away, '{}');
    expect(offline.status).toBe(409);
    expect(((await offline.json()) as ErrorBody).error.code).toBe('offline');
    const r = await connect('upd-member');
    const member = ((await (await t.api('/api/tokens', { json: { name: 'upd-reader', role: 'member' } })).json()) as { token: string }).token;
    expect((await t.api(`/api/runners/${r.runnerId}/update`, { method: 'POST', token: member, json: {} })).status).toBe(403);
    expect(await r.none('runner.update', 200)).toBe(true);
  });

  it('a runner that said it cannot update itself (hello.selfUpdate false: the one inside `up`) → 409 cannot_update; nothing sent, still online', async () => {
    const r = await FakeRunner.start(t, { name: 'upd-inside-up' });
    fakes.push(r);
    await r.hello({ name: 'upd-inside-up', selfUpdate: false });
    const res = await update(r.runnerId, '{}');
    expect(res.status).toBe(409);
    const e = (await res.json()) as ErrorBody;
    expect(e.error.code).toBe('cannot_update');
    expect(e.error.message).toBe(`runner upd-inside-up (${r.runnerId}) runs inside \`flotilla up\` and cannot update itself: update the package on its machine and start \`flotilla up\` again`);
    expect(await r.none('runner.update', 300)).toBe(true);
    expect(await status('upd-inside-up')).toBe('online');
  });

  it('sends runner.update (the server’s version by default); updating: no job for it; after `failed` it is online and gets the job', async () => {
    const r = await connect('upd-live', { pool: 'upd', gpu: 'a100' });
    const res = await update(r.runnerId);
    expect(res.status).toBe(200);
    const body = (await res.json()) as UpdateRunnerResponse;
    expect([body.runner.status, body.version, body.started]).toEqual(['updating', PACKAGE_VERSION, true]);
    expect((await r.next('runner.update')).version).toBe(PACKAGE_VERSION);
    r.send({ type: 'runner.update', phase: 'draining', version: PACKAGE_VERSION });
    // A repeat sends nothing.
    const again = (await (await update(r.runnerId, '{"version": "latest"}')).json()) as UpdateRunnerResponse;
    expect([again.runner.status, again.started]).toEqual(['updating', false]);
    expect(await r.none('runner.update', 200)).toBe(true);
    expect(await status('upd-live')).toBe('updating');
    expect((((await (await t.api('/api/runners?status=updating')).json()) as RunnerList).runners.map((x) => x.name))).toEqual(['upd-live']);

    const job = (await (await t.api('/api/jobs', { json: { agent: 'gpu-job', input: {}, labels: { pool: 'upd' } } })).json()) as Job;
    expect(await r.none('job.assign', 800)).toBe(true);
    expect(((await (await t.api(`/api/jobs/${job.id}`)).json()) as Job).status).toBe('queued');
    // jobs start on it says why it cannot (not "not connected")
    const start = await t.api(`/api/jobs/${job.id}/start`, { json: { runnerId: r.runnerId, force: true } });
    expect(start.status).toBe(409);
    expect(((await start.json()) as { error: { message: string } }).error.message).toBe(`runner upd-live (${r.runnerId}) is updating itself: it takes no job until it is back on the new version`);

    r.send({ type: 'runner.update', phase: 'failed', version: PACKAGE_VERSION, exitCode: 3, detail: 'npm ERR! 404' });
    const { assignment } = await r.next('job.assign');
    expect(assignment.jobId).toBe(job.id);
    expect(await status('upd-live')).toBe('busy');
    const activity = ((await (await t.api(`/api/runners/${r.runnerId}/activity`)).json()) as RunnerActivity).entries;
    expect(activity.filter((e) => e.kind.startsWith('update')).map((e) => [e.kind, e.text])).toEqual([
      ['update_failed', `update to ${PACKAGE_VERSION} failed (exit code 3): npm ERR! 404; it takes jobs again`],
      ['update', `update to ${PACKAGE_VERSION} requested by admin`],
    ]);
  });

  it('a runner that reconnects mid-update (hello.updating) stays updating; back without it after restarting: online, noted', async () => {
    const r = await connect('upd-again');
    await update(r.runnerId, '{"version":"0.2.0"}');
    await r.next('runner.update');
    r.send({ type: 'runner.update', phase: 'installing', version: '0.2.0' });
    r.send({ type: 'runner.update', phase: 'restarting', version: '0.2.0' });
    await new Promise((res) => setTimeout(res, 100));
    await r.close();
    // Away to re-execute: still `updating` (its heartbeat is fresh), not offline.
    expect(await status('upd-again')).toBe('updating');
    const cred = r.credential!;
    const back = await FakeRunner.connect(t.url, r.runnerId, cred);
    fakes.push(back);
    back.send({ type: 'hello', name: 'upd-again', labels: {}, capacity: 1, version: '0.2.0', running: [] });
    await back.next('welcome');
    await new Promise((res) => setTimeout(res, 100));
    expect(await status('upd-again')).toBe('online');
    const texts = ((await (await t.api(`/api/runners/${r.runnerId}/activity`)).json()) as RunnerActivity).entries.filter((e) => e.kind === 'update').map((e) => e.text);
    expect(texts[0]).toBe('back after the update to 0.2.0: version test → 0.2.0');

    // Reconnecting while still updating (hello.updating): it stays out of dispatch.
    await update(r.runnerId, '{"version":"0.3.0"}');
    await back.next('runner.update');
    await back.close();
    const third = await FakeRunner.connect(t.url, r.runnerId, cred);
    fakes.push(third);
    third.send({ type: 'hello', name: 'upd-again', labels: {}, capacity: 1, version: '0.2.0', running: [], updating: '0.3.0' });
    await third.next('welcome');
    expect(await status('upd-again')).toBe('updating');
  });
});

import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../store/open.js';
import { hashToken } from '../core/tokens.js';
import { createApiToken, ensureAdminToken } from './auth.js';
import { startTestServer, type TestServer } from './test-helpers.js';

describe('ensureAdminToken', () => {
  it('creates an admin token once, writes it 0600, and reads it back on later starts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-auth-'));
    const store = await openStore({ dataDir: join(dir, 'db') });
    try {
      const first = await ensureAdminToken(store, dir, 1_800_000_000_000);
      expect(first).toMatch(/^fla_[A-Za-z0-9_-]{43}$/);
      const file = join(dir, 'admin-token');
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect((await readFile(file, 'utf8')).trim()).toBe(first);
      const row = await store.findApiTokenByHash(hashToken(first!));
      expect(row?.role).toBe('admin');
      // Second start: no new token, the file's token is returned.
      expect(await ensureAdminToken(store, dir)).toBe(first);
      expect(await store.countApiTokens()).toBe(1);
      // File gone: null (and still no new token).
      await unlink(file);
      expect(await ensureAdminToken(store, dir)).toBeNull();
      expect(await store.countApiTokens()).toBe(1);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('GET /healthz and a revoked admin token', () => {
  it('proves the data folder\'s admin token only while it is a token: once revoked, no proof (fresh-tester finding: the CLI then sent the revoked token)', async () => {
    const t = await startTestServer();
    try {
      const challenge = 'cd'.repeat(32);
      const proofOf = async () => ((await (await t.api(`/healthz?adminTokenChallenge=${challenge}`, { token: null })).json()) as { adminTokenProof?: string }).adminTokenProof;
      expect(await proofOf()).toMatch(/^[0-9a-f]{64}$/);
      const row = await t.store.findApiTokenByHash(hashToken(t.admin));
      expect(await t.store.deleteApiToken(row!.id)).toBe(true);
      expect(await proofOf()).toBeUndefined();
    } finally {
      await t.close();
    }
  });
});

describe('API authentication', () => {
  let t: TestServer;
  let member: string;
  beforeAll(async () => {
    t = await startTestServer();
    member = await createApiToken(t.store, 'alice', 'member', Date.now());
  });
  afterAll(() => t.close());

  it('401 without a token, with a wrong token, and with a non-bearer header', async () => {
    for (const [token, headers] of [
      [null, {}],
      ['fla_notarealtoken000000000000000000000000000000', {}],
      [null, { authorization: `Basic ${t.admin}` }],
    ] as const) {
      const res = await t.api('/api/jobs', { token, headers });
      expect(res.status).toBe(401);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('unauthorized');
      expect(body.error.message).toMatch(/token/);
    }
  });

  it('every /api route needs a token, except register', async () => {
    for (const [method, path] of [
      ['GET', '/api/jobs'],
      ['POST', '/api/jobs'],
      ['GET', '/api/jobs/1'],
      ['POST', '/api/jobs/1/cancel'],
      ['GET', '/api/jobs/1/events'],
      ['GET', '/api/runners'],
      ['POST', '/api/runner-tokens'],
      ['GET', '/api/agents'],
      ['GET', '/api/nothing-here'],
    ]) {
      expect((await t.api(path!, { method: method!, token: null })).status, `${method} ${path}`).toBe(401);
    }
    // register is public: a bad body gets 400, not 401.
    expect((await t.api('/api/runners/register', { token: null, json: {} })).status).toBe(400);
  });

  it('/healthz and /openapi.json are public', async () => {
    const h = await t.api('/healthz', { token: null });
    expect(h.status).toBe(200);
    expect(await h.json()).toEqual({ ok: true, store: 'sqlite' });
    // a challenge is answered with the proof of the data folder's admin token (core/tokens.ts), worked out here from its definition
    const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
    const challenge = 'ab'.repeat(32);
    const proven = await t.api(`/healthz?adminTokenChallenge=${challenge}`, { token: null });
    expect(await proven.json()).toEqual({ ok: true, store: 'sqlite', adminTokenProof: createHmac('sha256', sha(t.admin)).update(`flotilla admin-token proof\n${challenge}`, 'utf8').digest('hex') });
    // a challenge that is not 64 lowercase hex is ignored
    expect(await (await t.api('/healthz?adminTokenChallenge=xyz', { token: null })).json()).toEqual({ ok: true, store: 'sqlite' });
    expect((await t.api('/openapi.json', { token: null })).status).toBe(200);
  });

  it('member tokens may read but not create runner tokens (members read, admins change); admin may', async () => {
    expect((await t.api('/api/agents', { token: member })).status).toBe(200);
    const denied = await t.api('/api/runner-tokens', { token: member, json: {} });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    // the README's one exception to "members read everything": who may sign in or connect
    for (const path of ['/api/users', '/api/tokens', '/api/runner-tokens']) expect([path, (await t.api(path, { token: member })).status]).toEqual([path, 403]);
    const before = Date.now();
    const ok = await t.api('/api/runner-tokens', { json: { labels: { os: 'linux' }, expiresInSeconds: 120 } });
    expect(ok.status).toBe(201);
    const body = (await ok.json()) as { token: string; expiresAt: string; labels: Record<string, string> };
    expect(body.token).toMatch(/^flr_/);
    expect(body.labels).toEqual({ os: 'linux' }); // the binding labels, as the list shows them (a fresh tester)
    const exp = Date.parse(body.expiresAt);
    expect(exp).toBeGreaterThanOrEqual(before + 120_000);
    expect(exp).toBeLessThanOrEqual(Date.now() + 120_000);
  });

  it('runner-tokens validates its body', async () => {
    const res = await t.api('/api/runner-tokens', { json: { expiresInSeconds: -5 } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; field?: string; message: string } };
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.field).toBe('expiresInSeconds');
    expect(body.error.message).toMatch(/^expiresInSeconds: /);
  });
});

describe('POST /api/runners/register', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  it('is single use, binds the token labels (the runner may only add keys), and issues a working credential', async () => {
    const token = await t.regToken({ os: 'linux', pool: 'a' });
    const body = { token, name: 'box-1', labels: { pool: 'b', gpu: 'none' }, capacity: 2 };
    const first = await t.api('/api/runners/register', { token: null, json: body });
    expect(first.status).toBe(201);
    const { runnerId, credential } = (await first.json()) as { runnerId: number; credential: string };
    expect(credential).toMatch(/^flc_/);
    const row = await t.store.findRunnerByCredentialHash(hashToken(credential));
    expect(row).toMatchObject({ id: runnerId, name: 'box-1', capacity: 2, labels: { os: 'linux', pool: 'a', gpu: 'none' } });

    const again = await t.api('/api/runners/register', { token: null, json: body });
    expect(again.status).toBe(401);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    expect((await t.store.listRunners()).length).toBe(1);
  });

  it('refuses unknown and expired tokens', async () => {
    const unknown = await t.api('/api/runners/register', { token: null, json: { token: 'flr_nope', name: 'x' } });
    expect(unknown.status).toBe(401);
    const { createRegistrationToken } = await import('./auth.js');
    const expired = await createRegistrationToken(t.store, {}, 1, Date.now() - 10_000);
    const res = await t.api('/api/runners/register', { token: null, json: { token: expired, name: 'x' } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/expired/);
  });
});

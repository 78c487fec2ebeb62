import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FlotillaClient } from '../../src/client/client.js';
import { hashPassword, verifyPassword } from '../../src/server/passwords.js';
import { startTestServer, type TestServer } from '../../src/server/test-helpers.js';

describe('passwords (scrypt)', () => {
  it('verifies the right password only, and never throws on garbage', async () => {
    const h = await hashPassword('correct horse battery');
    expect(h).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(await verifyPassword('correct horse battery', h)).toBe(true);
    expect(await verifyPassword('correct horse batterY', h)).toBe(false);
    expect(await verifyPassword('x', 'plain')).toBe(false);
    expect(await verifyPassword('x', 'scrypt$3$8$1$aaaa$bbbb')).toBe(false); // N not a power of two
    expect(h).not.toBe(await hashPassword('correct horse battery')); // salted
  });
});

/** Signs in over real HTTP and returns the session cookie (`flotilla_session=...`). */
async function signIn(t: TestServer, name: string, password: string, headers: Record<string, string> = { 'x-flotilla-csrf': '1' }): Promise<Response> {
  return fetch(t.url + '/api/session', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ name, password }) });
}

function cookieOf(res: Response): string {
  const set = res.headers.get('set-cookie') ?? '';
  return set.split(';')[0]!;
}

describe('sign-in, sessions and roles (issue 8)', () => {
  let t: TestServer;
  let admin: FlotillaClient;
  beforeAll(async () => {
    t = await startTestServer();
    admin = new FlotillaClient({ url: t.url, token: t.admin });
    await admin.createUser({ name: 'mia', role: 'member', password: 'member-pass-1' });
    await admin.createUser({ name: 'ada', role: 'admin', password: 'admin-pass-1' });
  });
  afterAll(() => t.close());

  it('the admin API token creates users; passwords are checked; names and roles are validated', async () => {
    const users = await admin.listUsers();
    expect(users.map((u) => [u.name, u.role, u.hasPassword])).toEqual([
      ['mia', 'member', true],
      ['ada', 'admin', true],
    ]);
    await expect(admin.createUser({ name: 'mia', role: 'admin', password: 'another-pass' })).rejects.toMatchObject({ status: 409, field: 'name' });
    await expect(admin.createUser({ name: 'short', role: 'admin', password: 'short' })).rejects.toMatchObject({ status: 400, field: 'password' });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a bad role on purpose
    await expect(admin.createUser({ name: 'x', role: 'owner' as any, password: 'long-enough-1' })).rejects.toMatchObject({ status: 400, field: 'role' });
    expect((await t.api('/api/users')).status).toBe(200);
  });

  it('sign-in sets an HttpOnly SameSite=Strict cookie; wrong password or unknown name → 401 alike', async () => {
    const ok = await signIn(t, 'mia', 'member-pass-1');
    expect(ok.status).toBe(200);
    const set = ok.headers.get('set-cookie')!;
    expect(set).toMatch(/^flotilla_session=fls_[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    const body = (await ok.json()) as { principal: { role: string; kind: string } };
    expect(body.principal).toMatchObject({ kind: 'user', name: 'mia', role: 'member' });
    for (const [n, p] of [
      ['mia', 'wrong-password'],
      ['nobody', 'member-pass-1'],
    ]) {
      const bad = await signIn(t, n!, p!);
      expect(bad.status).toBe(401);
      expect(await bad.json()).toEqual({ error: { code: 'bad_credentials', message: 'wrong user name or password' } });
      expect(bad.headers.get('set-cookie')).toBeNull();
    }
    // No CSRF header, or a cross-site browser request: refused (no login CSRF).
    expect((await signIn(t, 'mia', 'member-pass-1', {})).status).toBe(403);
    expect((await signIn(t, 'mia', 'member-pass-1', { 'x-flotilla-csrf': '1', 'sec-fetch-site': 'cross-site' })).status).toBe(403);
  });

  it('a member session reads but every change is refused (403), even with the CSRF header', async () => {
    const cookie = cookieOf(await signIn(t, 'mia', 'member-pass-1'));
    const get = (p: string) => fetch(t.url + p, { headers: { cookie } });
    expect((await get('/api/runners')).status).toBe(200);
    expect((await get('/api/jobs')).status).toBe(200);
    expect(((await (await get('/api/session')).json()) as { principal: { name: string } }).principal.name).toBe('mia');
    expect((await get('/api/users')).status).toBe(403);
    const post = (p: string, json: unknown) =>
      fetch(t.url + p, { method: 'POST', headers: { cookie, 'content-type': 'application/json', 'x-flotilla-csrf': '1' }, body: JSON.stringify(json) });
    for (const [p, json] of [
      ['/api/jobs', { agent: 'gpu-job', input: { n: 1 } }],
      ['/api/jobs/1/cancel', {}],
      ['/api/runner-tokens', {}],
      ['/api/users', { name: 'z', role: 'admin', password: 'long-enough-1' }],
      ['/api/tokens', { name: 'z', role: 'admin' }],
    ] as const) {
      const res = await post(p, json);
      expect(res.status, p).toBe(403);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    }
    expect(await t.store.countUsers()).toBe(2);
    // member API tokens are refused the same way
    const memberToken = (await admin.createApiToken({ name: 'ci', role: 'member' })).token;
    expect((await t.api('/api/jobs', { token: memberToken, json: { agent: 'gpu-job', input: { n: 1 } } })).status).toBe(403);
    expect((await t.api('/api/jobs', { token: memberToken })).status).toBe(200);
  });

  it('an admin session changes things only with the CSRF header; sign-out ends the session', async () => {
    const cookie = cookieOf(await signIn(t, 'ada', 'admin-pass-1'));
    const create = (headers: Record<string, string>) =>
      fetch(t.url + '/api/jobs', { method: 'POST', headers: { cookie, 'content-type': 'application/json', ...headers }, body: JSON.stringify({ agent: 'gpu-job', input: { n: 2 } }) });
    const noCsrf = await create({});
    expect(noCsrf.status).toBe(403);
    expect(((await noCsrf.json()) as { error: { code: string } }).error.code).toBe('csrf');
    expect((await create({ 'x-flotilla-csrf': '1', 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await create({ 'x-flotilla-csrf': '1', 'sec-fetch-site': 'same-origin' })).status).toBe(201);

    const out = await fetch(t.url + '/api/session/logout', { method: 'POST', headers: { cookie, 'x-flotilla-csrf': '1' } });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^flotilla_session=; .*Max-Age=0/);
    const after = await fetch(t.url + '/api/jobs', { headers: { cookie } });
    expect(after.status).toBe(401);
  });

  it('API tokens: created (shown once), listed without secrets, revoked', async () => {
    const created = await admin.createApiToken({ name: 'deploy', role: 'admin' });
    expect(created.token).toMatch(/^fla_/);
    const listed = await admin.listApiTokens();
    expect(listed.find((x) => x.id === created.id)).toEqual({ id: created.id, name: 'deploy', role: 'admin', createdAt: created.createdAt });
    expect(JSON.stringify(listed)).not.toContain('fla_');
    const c2 = new FlotillaClient({ url: t.url, token: created.token });
    expect((await c2.session()).principal).toMatchObject({ kind: 'token', name: 'deploy', role: 'admin' });
    await expect(c2.revokeApiToken(created.id)).rejects.toMatchObject({ status: 409 });
    await admin.revokeApiToken(created.id);
    await expect(c2.session()).rejects.toMatchObject({ status: 401 });
    await expect(admin.revokeApiToken(created.id)).rejects.toMatchObject({ status: 404 });
  });

  it('serves the dashboard at / and client routes, with security headers; API paths stay JSON', async () => {
    const res = await fetch(t.url + '/jobs/12');
    // Built by `npm run build` (vite); without a build the server says how to make one.
    if (res.status === 503) {
      expect(await res.text()).toMatch(/npm run build/);
      return;
    }
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(await res.text()).toMatch(/<div id="root">/);
    // An encoded ../ cannot climb out of dist/web.
    const climb = await fetch(t.url + '/assets/..%2f..%2f..%2fpackage.json');
    expect(climb.status).toBe(404);
    expect(await climb.text()).not.toContain('"name": "flotilla"');
    expect((await fetch(t.url + '/api/nope')).status).toBe(401);
  });
});

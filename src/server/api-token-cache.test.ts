import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiTokenRow } from '../store/types.js';
import { API_TOKEN_TTL_MS, ApiTokenCache } from './api-token-cache.js';
import { readSse, startTestServer, type TestServer } from './test-helpers.js';

const row = (id: number): ApiTokenRow => ({ id, name: `t${id}`, role: 'admin', createdAt: 0 });

/** A store holding `rows` by hash, counting reads; `gate` (when set) holds reads until released. */
function fakeStore(rows: Map<string, ApiTokenRow>) {
  const s = {
    reads: 0,
    gate: null as Promise<void> | null,
    async findApiTokenByHash(h: string) {
      s.reads++;
      const found = rows.get(h) ?? null; // read when asked, as a snapshot would be
      if (s.gate) await s.gate;
      return found;
    },
  };
  return s;
}

describe('ApiTokenCache', () => {
  it('asks the store once per token per TTL, again after it, and never keeps an unknown token', async () => {
    const rows = new Map([['h1', row(1)]]);
    const store = fakeStore(rows);
    let now = 1_000_000;
    const cache = new ApiTokenCache(store, () => now);
    expect(await cache.find('h1')).toEqual(row(1));
    expect(await cache.find('h1')).toEqual(row(1));
    now += API_TOKEN_TTL_MS - 1;
    expect(await cache.find('h1')).toEqual(row(1));
    expect(store.reads).toBe(1);
    // Revoked through another replica: seen once the TTL is up.
    rows.delete('h1');
    now += 1;
    expect(await cache.find('h1')).toBeNull();
    expect(await cache.find('h1')).toBeNull();
    expect(store.reads).toBe(3);
    // Created through another replica: an unknown token is not remembered as unknown.
    rows.set('h1', row(1));
    expect(await cache.find('h1')).toEqual(row(1));
    expect(store.reads).toBe(4);
  });

  it('invalidate forgets every token, and a read that began before it is returned but not kept', async () => {
    const rows = new Map([['h1', row(1)], ['h2', row(2)]]);
    const store = fakeStore(rows);
    const cache = new ApiTokenCache(store, () => 5);
    await cache.find('h1');
    let release!: () => void;
    store.gate = new Promise((r) => (release = r));
    const pending = cache.find('h2'); // read in flight
    cache.invalidate();
    rows.delete('h2');
    release();
    expect(await pending).toEqual(row(2));
    store.gate = null;
    expect(await cache.find('h2')).toBeNull(); // not kept: read again
    expect(await cache.find('h1')).toEqual(row(1)); // forgotten: read again
    expect(store.reads).toBe(4);
  });
});

describe('API token revoked through the API', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  it('stops working at once on this server, though it was just used (and cached)', async () => {
    const created = await t.api('/api/tokens', { method: 'POST', json: { name: 'ci', role: 'admin' } });
    expect(created.status).toBe(201);
    const { id, token } = (await created.json()) as { id: number; token: string };
    expect((await t.api('/api/jobs', { token })).status).toBe(200);
    expect((await t.api('/api/jobs', { token })).status).toBe(200);
    expect((await t.api(`/api/tokens/${id}`, { method: 'DELETE' })).status).toBe(204);
    const after = await t.api('/api/jobs', { token });
    expect(after.status).toBe(401);
    expect(((await after.json()) as { error: { message: string } }).error.message).toBe('unknown API token');
    // The admin's own token is unaffected.
    expect((await t.api('/api/jobs')).status).toBe(200);
  });

  it('a token revoked through another replica (straight in the store) cannot create credentials here in its cached second, though it still reads', async () => {
    const created = await t.api('/api/tokens', { method: 'POST', json: { name: 'elsewhere', role: 'admin' } });
    const { id, token } = (await created.json()) as { id: number; token: string };
    expect((await t.api('/api/jobs', { token })).status).toBe(200); // found, and kept 1 s
    expect(await t.store.deleteApiToken(id)).toBe(true); // as another replica revokes it
    for (const [method, path, json] of [
      ['POST', '/api/tokens', { name: 'persist', role: 'admin' }],
      ['POST', '/api/users', { name: 'mallory', role: 'admin', password: 'long enough pw' }],
      ['POST', '/api/runner-tokens', { labels: {} }],
    ] as const) {
      const res = await t.api(path, { method, json, token });
      expect(res.status, `${method} ${path}`).toBe(401);
    }
    expect((await t.api('/api/tokens')).status).toBe(200);
    const names = ((await (await t.api('/api/tokens')).json()) as { tokens: Array<{ name: string }> }).tokens.map((x) => x.name);
    expect(names).not.toContain('persist');
  });

  it('an open event stream of a token revoked through another replica ends with an unauthorized error within the re-check (2 s) + a poll', async () => {
    const created = await t.api('/api/tokens', { method: 'POST', json: { name: 'watcher', role: 'member' } });
    const { id, token } = (await created.json()) as { id: number; token: string };
    const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' } } })).json()) as { id: number };
    const res = await t.api(`/api/jobs/${job.id}/events`, { token });
    expect(res.status).toBe(200);
    expect(await t.store.deleteApiToken(id)).toBe(true); // as another replica revokes it
    const t0 = Date.now();
    const msgs = await readSse(res, { timeoutMs: 8000 });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(msgs.at(-1)).toEqual({ event: 'error', data: JSON.stringify({ code: 'unauthorized', message: 'the API token was revoked' }) });
    expect((await t.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' })).status).toBe(200);
  });
});

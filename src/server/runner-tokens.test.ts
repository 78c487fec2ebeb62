/**
 * Runner registration tokens an admin lists and revokes, over a real server (SQLite, and
 * PostgreSQL when reachable): `GET /api/runner-tokens[?all=true]`,
 * `POST /api/runner-tokens/{id}/revoke`, and registration refusing a revoked token with the
 * same message as a used, expired or unknown one. The server's clock is set by the test, so
 * every time below is worked out by hand.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { hashToken } from '../core/tokens.js';
import { createTestDatabase } from '../store/test-pg.js';
import { startTestServer, type TestServer } from './test-helpers.js';

const T0 = Date.parse('2027-03-01T10:00:00.000Z');
const REFUSED = 'registration token is unknown, already used, expired or revoked';

// One database per server (each server makes its own admin token in an empty store).
const pgDbs = [await createTestDatabase(), await createTestDatabase()];
const pgDb = pgDbs[0]!;
afterAll(async () => {
  for (const db of pgDbs) await db?.drop();
});

type Info = { id: number; labels: Record<string, string>; status: string; createdAt: string; expiresAt: string; usedAt: string | null; revokedAt: string | null };

for (const engine of ['sqlite', 'postgres'] as const) {
  describe.skipIf(engine === 'postgres' && pgDb === null)(`runner registration tokens: list and revoke (${engine})`, () => {
    it('lists live tokens (all with ?all=true) without secrets, revokes by id, registration refuses a revoked token', async () => {
      let clock = T0;
      const t: TestServer = await startTestServer({ now: () => clock, ...(engine === 'postgres' ? { databaseUrl: pgDb!.url } : {}) });
      try {
        const create = async (body: unknown) => {
          const res = await t.api('/api/runner-tokens', { json: body });
          expect(res.status).toBe(201);
          return (await res.json()) as { id: number; token: string; expiresAt: string };
        };
        const register = (token: string, name: string) => t.api('/api/runners/register', { token: null, json: { token, name } });

        // A at T0 (10 min), B at T0+1s (1 min), C at T0+2s (used at T0+3s), D at T0+4s (1 s; expired by T0+10s).
        const a = await create({ labels: { os: 'linux' }, expiresInSeconds: 600 });
        expect(a.expiresAt).toBe('2027-03-01T10:10:00.000Z');
        clock = T0 + 1000;
        const b = await create({ expiresInSeconds: 60 });
        clock = T0 + 2000;
        const c = await create({ labels: { pool: 'ci' } });
        clock = T0 + 3000;
        expect((await register(c.token, 'box-c')).status).toBe(201);
        clock = T0 + 4000;
        const d = await create({ expiresInSeconds: 1 });
        expect(new Set([a.id, b.id, c.id, d.id]).size).toBe(4);
        expect(a.id < b.id && b.id < c.id && c.id < d.id).toBe(true);
        clock = T0 + 10_000;

        const rowA: Info = { id: a.id, labels: { os: 'linux' }, status: 'live', createdAt: '2027-03-01T10:00:00.000Z', expiresAt: '2027-03-01T10:10:00.000Z', usedAt: null, revokedAt: null };
        const rowB: Info = { id: b.id, labels: {}, status: 'live', createdAt: '2027-03-01T10:00:01.000Z', expiresAt: '2027-03-01T10:01:01.000Z', usedAt: null, revokedAt: null };
        const rowC: Info = { id: c.id, labels: { pool: 'ci' }, status: 'used', createdAt: '2027-03-01T10:00:02.000Z', expiresAt: '2027-03-01T11:00:02.000Z', usedAt: '2027-03-01T10:00:03.000Z', revokedAt: null };
        const rowD: Info = { id: d.id, labels: {}, status: 'expired', createdAt: '2027-03-01T10:00:04.000Z', expiresAt: '2027-03-01T10:00:05.000Z', usedAt: null, revokedAt: null };

        // Default: only the live ones. Never a token or its hash.
        const live = await t.api('/api/runner-tokens');
        expect(live.status).toBe(200);
        const liveText = await live.text();
        expect(JSON.parse(liveText)).toEqual({ tokens: [rowA, rowB] });
        const all = await t.api('/api/runner-tokens?all=true');
        const allText = await all.text();
        expect(JSON.parse(allText)).toEqual({ tokens: [rowA, rowB, rowC, rowD] });
        expect((await (await t.api('/api/runner-tokens?all=false')).json()) as unknown).toEqual({ tokens: [rowA, rowB] });
        for (const tok of [a, b, c, d]) {
          for (const text of [liveText, allText]) {
            expect(text).not.toContain(tok.token);
            expect(text).not.toContain(hashToken(tok.token));
          }
        }

        // Revoke A at T0+20s: 200 with the token, revoked; again at T0+30s: unchanged.
        clock = T0 + 20_000;
        const rev = await t.api(`/api/runner-tokens/${a.id}/revoke`, { method: 'POST' });
        expect(rev.status).toBe(200);
        const revokedA: Info = { ...rowA, status: 'revoked', revokedAt: '2027-03-01T10:00:20.000Z' };
        expect(await rev.json()).toEqual(revokedA);
        clock = T0 + 30_000;
        const again = await t.api(`/api/runner-tokens/${a.id}/revoke`, { method: 'POST' });
        expect(again.status).toBe(200);
        expect(await again.json()).toEqual(revokedA);

        // Registration with A is refused exactly like a used, an expired and an unknown token.
        const bodies: unknown[] = [];
        for (const token of [a.token, c.token, d.token, 'flr_nosuchtokennosuchtoken']) {
          const res = await register(token, 'box-x');
          expect(res.status).toBe(401);
          const text = await res.text();
          expect(text).not.toContain(token);
          bodies.push(JSON.parse(text));
        }
        for (const body of bodies) expect(body).toEqual({ error: { code: 'unauthorized', message: REFUSED, field: 'token' } });
        expect((await t.api('/api/runners')).status).toBe(200);
        expect(((await (await t.api('/api/runners')).json()) as { runners: { name: string }[] }).runners.map((r) => r.name)).toEqual(['box-c']);

        // Now only B is live; all shows A revoked.
        expect(await (await t.api('/api/runner-tokens')).json()).toEqual({ tokens: [rowB] });
        expect(await (await t.api('/api/runner-tokens?all=true')).json()).toEqual({ tokens: [revokedA, rowB, rowC, rowD] });

        // A used token stays used (200, nothing changes); an expired one can be revoked.
        expect(await (await t.api(`/api/runner-tokens/${c.id}/revoke`, { method: 'POST' })).json()).toEqual(rowC);
        expect(await (await t.api(`/api/runner-tokens/${d.id}/revoke`, { method: 'POST' })).json()).toEqual({ ...rowD, status: 'revoked', revokedAt: '2027-03-01T10:00:30.000Z' });
        // B still registers a runner.
        expect((await register(b.token, 'box-b')).status).toBe(201);
      } finally {
        await t.close();
      }
    });

    it('unknown id → 404 naming it; ids outside 1..2147483647 → 400; bad query → 400; members and anonymous callers refused', async () => {
      const t = await startTestServer(engine === 'postgres' ? { databaseUrl: pgDbs[1]!.url } : {});
      try {
        for (const id of [987654, 2147483647]) {
          const res = await t.api(`/api/runner-tokens/${id}/revoke`, { method: 'POST' });
          expect(res.status).toBe(404);
          expect(await res.json()).toEqual({ error: { code: 'not_found', message: `no runner registration token ${id}`, field: 'id' } });
        }
        for (const id of ['0', '2147483648', '99999999999999999999', 'abc', '-1', '1.5']) {
          const res = await t.api(`/api/runner-tokens/${id}/revoke`, { method: 'POST' });
          expect(res.status, id).toBe(400);
          expect(await res.json()).toEqual({ error: { code: 'invalid_request', message: 'id: must be an integer from 1 to 2147483647 (a runner registration token id)', field: 'id' } });
        }
        const maybe = await t.api('/api/runner-tokens?all=maybe');
        expect(maybe.status).toBe(400);
        expect(await maybe.json()).toEqual({ error: { code: 'invalid_request', message: 'all: must be true or false, got "maybe"', field: 'all' } });
        const other = await t.api('/api/runner-tokens?limit=3');
        expect(other.status).toBe(400);
        expect(((await other.json()) as { error: { field: string } }).error.field).toBe('limit');

        const made = (await (await t.api('/api/runner-tokens', { json: {} })).json()) as { id: number; token: string };
        const member = ((await (await t.api('/api/tokens', { json: { name: 'reader', role: 'member' } })).json()) as { token: string }).token;
        expect((await t.api('/api/runner-tokens', { token: member })).status).toBe(403);
        expect((await t.api(`/api/runner-tokens/${made.id}/revoke`, { method: 'POST', token: member })).status).toBe(403);
        expect((await t.api('/api/runner-tokens', { token: null })).status).toBe(401);
        expect((await t.api(`/api/runner-tokens/${made.id}/revoke`, { method: 'POST', token: null })).status).toBe(401);
        // Nothing was revoked by those: the token still registers a runner.
        expect((await t.api('/api/runners/register', { token: null, json: { token: made.token, name: 'box' } })).status).toBe(201);
      } finally {
        await t.close();
      }
    });
  });
}

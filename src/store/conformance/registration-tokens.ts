import { expect, it } from 'vitest';
import { T, fakeHash, type Harness } from './harness.js';

/** Registration tokens an admin lists and revokes (0019): ids, live filter, revocation. */
export function registrationTokenTests(h: Harness): void {
  it('registration tokens: create returns the row (no hash), list by id, live filter at liveAt', async () => {
    const s = await h.open();
    expect(await s.listRegistrationTokens()).toEqual([]);
    const ha = fakeHash('g');
    const hb = fakeHash('g');
    const hc = fakeHash('g');
    const hd = fakeHash('g');
    const a = await s.createRegistrationToken({ tokenHash: ha, labels: { os: 'linux' }, expiresAt: T + 1000, now: T });
    const b = await s.createRegistrationToken({ tokenHash: hb, labels: {}, expiresAt: T + 500, now: T + 1 });
    const c = await s.createRegistrationToken({ tokenHash: hc, labels: { pool: 'ci', os: 'mac' }, expiresAt: T + 2000, now: T + 2 });
    const d = await s.createRegistrationToken({ tokenHash: hd, labels: {}, expiresAt: T + 3000, now: T + 3 });
    // Exactly these fields: never the token hash.
    expect(a).toEqual({ id: a.id, labels: { os: 'linux' }, createdAt: T, expiresAt: T + 1000, usedAt: null, revokedAt: null });
    expect(Number.isInteger(a.id) && a.id > 0).toBe(true);
    expect(b.id).toBeGreaterThan(a.id);
    expect(c.id).toBeGreaterThan(b.id);
    expect(d.id).toBeGreaterThan(c.id);

    // c used at T+10, d revoked at T+20.
    expect(await s.consumeRegistrationToken(hc, T + 10)).toEqual({ labels: { pool: 'ci', os: 'mac' } });
    expect(await s.revokeRegistrationToken(d.id, T + 20)).toEqual({ id: d.id, labels: {}, createdAt: T + 3, expiresAt: T + 3000, usedAt: null, revokedAt: T + 20 });

    const all = await s.listRegistrationTokens();
    expect(all).toEqual([
      { id: a.id, labels: { os: 'linux' }, createdAt: T, expiresAt: T + 1000, usedAt: null, revokedAt: null },
      { id: b.id, labels: {}, createdAt: T + 1, expiresAt: T + 500, usedAt: null, revokedAt: null },
      { id: c.id, labels: { pool: 'ci', os: 'mac' }, createdAt: T + 2, expiresAt: T + 2000, usedAt: T + 10, revokedAt: null },
      { id: d.id, labels: {}, createdAt: T + 3, expiresAt: T + 3000, usedAt: null, revokedAt: T + 20 },
    ]);
    for (const row of all) for (const hash of [ha, hb, hc, hd]) expect(JSON.stringify(row)).not.toContain(hash);
    // Live at T+100: a and b (c used, d revoked). At T+500 b has expired (expiry is strict).
    expect((await s.listRegistrationTokens({ liveAt: T + 100 })).map((r) => r.id)).toEqual([a.id, b.id]);
    expect((await s.listRegistrationTokens({ liveAt: T + 499 })).map((r) => r.id)).toEqual([a.id, b.id]);
    expect((await s.listRegistrationTokens({ liveAt: T + 500 })).map((r) => r.id)).toEqual([a.id]);
    expect(await s.listRegistrationTokens({ liveAt: T + 1000 })).toEqual([]);
  });

  it('registration tokens: a revoked token is never consumed; revoke twice keeps the first time; unknown id → null; a used token is left as it is', async () => {
    const s = await h.open();
    const ha = fakeHash('v');
    const hb = fakeHash('v');
    const a = await s.createRegistrationToken({ tokenHash: ha, labels: { os: 'linux' }, expiresAt: T + 10_000, now: T });
    const b = await s.createRegistrationToken({ tokenHash: hb, labels: {}, expiresAt: T + 10_000, now: T });

    const r1 = await s.revokeRegistrationToken(a.id, T + 5);
    expect(r1).toEqual({ id: a.id, labels: { os: 'linux' }, createdAt: T, expiresAt: T + 10_000, usedAt: null, revokedAt: T + 5 });
    expect(await s.consumeRegistrationToken(ha, T + 6)).toBeNull();
    // Again, later: nothing changes, still revoked at T+5, still refused.
    expect(await s.revokeRegistrationToken(a.id, T + 50)).toEqual(r1);
    expect(await s.consumeRegistrationToken(ha, T + 60)).toBeNull();
    expect((await s.listRegistrationTokens()).find((r) => r.id === a.id)).toEqual({ ...r1, usedAt: null });

    // Unknown ids, including past the int4 range PostgreSQL keeps ids in.
    expect(await s.revokeRegistrationToken(b.id + 1000, T)).toBeNull();
    expect(await s.revokeRegistrationToken(2_147_483_647, T)).toBeNull();
    expect(await s.revokeRegistrationToken(2_147_483_648, T)).toBeNull();

    // b used first: revoking it afterwards changes nothing (its runner is what to revoke).
    expect(await s.consumeRegistrationToken(hb, T + 7)).toEqual({ labels: {} });
    expect(await s.revokeRegistrationToken(b.id, T + 8)).toEqual({ id: b.id, labels: {}, createdAt: T, expiresAt: T + 10_000, usedAt: T + 7, revokedAt: null });
  });

  it('registration tokens: revoke racing consume on two instances: exactly one takes effect', async () => {
    const s = await h.open();
    const s2 = await h.another(s);
    for (let i = 0; i < 5; i++) {
      const hash = fakeHash('x');
      const t = await s.createRegistrationToken({ tokenHash: hash, labels: {}, expiresAt: T + 1000, now: T });
      const [used, revoked] = await Promise.all([s.consumeRegistrationToken(hash, T + 1), s2.revokeRegistrationToken(t.id, T + 2)]);
      expect(revoked).not.toBeNull();
      if (used) expect(revoked).toMatchObject({ usedAt: T + 1, revokedAt: null });
      else expect(revoked).toMatchObject({ usedAt: null, revokedAt: T + 2 });
      // Whatever won, the token is now spent for good.
      expect(await s.consumeRegistrationToken(hash, T + 3)).toBeNull();
    }
  });
}

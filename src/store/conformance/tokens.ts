import { expect, it } from 'vitest';
import { T, fakeHash, type Harness } from './harness.js';

export function tokenTests(h: Harness): void {
  it('api tokens: create, find by hash, count, unique hash', async () => {
    const s = await h.open();
    expect(await s.countApiTokens()).toBe(0);
    const hash = fakeHash('a');
    const row = await s.createApiToken({ name: 'local admin', role: 'admin', tokenHash: hash, now: T });
    expect(row).toEqual({ id: row.id, name: 'local admin', role: 'admin', createdAt: T });
    expect(Number.isInteger(row.id) && row.id > 0).toBe(true);
    expect(await s.findApiTokenByHash(hash)).toEqual(row);
    expect(await s.findApiTokenByHash(fakeHash('x'))).toBeNull();
    const m = await s.createApiToken({ name: 'ci', role: 'member', tokenHash: fakeHash('a'), now: T + 1 });
    expect(m.role).toBe('member');
    expect(m.createdAt).toBe(T + 1);
    expect(m.id).not.toBe(row.id);
    expect(await s.countApiTokens()).toBe(2);
    await expect(s.createApiToken({ name: 'dup', role: 'member', tokenHash: hash, now: T })).rejects.toThrow();
    expect(await s.countApiTokens()).toBe(2);
  });

  it('registration tokens: single use, expiry strictly after now', async () => {
    const s = await h.open();
    const a = fakeHash('r');
    const b = fakeHash('r');
    const c = fakeHash('r');
    for (const hash of [a, b, c]) await s.createRegistrationToken({ tokenHash: hash, labels: { os: 'linux', pool: 'ci' }, expiresAt: T + 1000, now: T });
    // a: used before expiry, once.
    expect(await s.consumeRegistrationToken(a, T + 999)).toEqual({ labels: { os: 'linux', pool: 'ci' } });
    expect(await s.consumeRegistrationToken(a, T + 999)).toBeNull();
    // b: at exactly expiresAt it is already expired; and it stays unusable later.
    expect(await s.consumeRegistrationToken(b, T + 1000)).toBeNull();
    expect(await s.consumeRegistrationToken(b, T + 5000)).toBeNull();
    // unknown hash
    expect(await s.consumeRegistrationToken(fakeHash('r'), T)).toBeNull();
    // c: two instances racing: exactly one wins.
    const s2 = await h.another(s);
    const results = await Promise.all([s.consumeRegistrationToken(c, T + 1), s2.consumeRegistrationToken(c, T + 1), s.consumeRegistrationToken(c, T + 1)]);
    expect(results.filter((r) => r !== null)).toEqual([{ labels: { os: 'linux', pool: 'ci' } }]);
  });
}

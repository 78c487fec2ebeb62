import { expect, it } from 'vitest';
import { T, fakeHash, newRunner, type Harness } from './harness.js';

/** Runner instances (0021: one process per runner credential) and the runner name rule. */
export function runnerClaimTests(h: Harness): void {
  const stale = (now: number) => now - 20_000;

  it('runner instance: first claim wins; another live process is refused with the holder; the same process and a stale holder are replaced', async () => {
    const s = await h.open();
    const r = await newRunner(s, {}, 'claimed');
    await s.touchRunner(r.id, T, { version: '1.2.3' });
    expect(await s.claimRunnerInstance(r.id, { instance: 'proc-a', conn: 'c1', now: T + 10, staleBefore: stale(T + 10) })).toEqual({ ok: true });
    expect(await s.getRunner(r.id)).toMatchObject({ connected: true, offline: false, lastHeartbeatAt: T + 10 });
    // Another process while proc-a is live: refused, nothing changes.
    expect(await s.claimRunnerInstance(r.id, { instance: 'proc-b', conn: 'c2', now: T + 1000, staleBefore: stale(T + 1000) })).toEqual({
      ok: false,
      reason: 'in_use',
      holder: { instance: 'proc-a', since: T + 10, lastHeartbeatAt: T + 10, name: 'claimed', version: '1.2.3' },
    });
    expect(await s.touchRunner(r.id, T + 1100, { conn: 'c1' })).toBe(true);
    expect(await s.touchRunner(r.id, T + 1100, { conn: 'c2' })).toBe(false);
    // The same process on a new connection (a network blip): taken over, since kept.
    expect(await s.claimRunnerInstance(r.id, { instance: 'proc-a', conn: 'c3', now: T + 2000, staleBefore: stale(T + 2000) })).toEqual({ ok: true });
    expect(await s.touchRunner(r.id, T + 2100, { conn: 'c1' })).toBe(false);
    // The replaced connection closing releases nothing.
    expect(await s.releaseRunnerInstance(r.id, 'c1')).toBe(false);
    expect((await s.getRunner(r.id))?.connected).toBe(true);
    const refused = await s.claimRunnerInstance(r.id, { instance: 'proc-b', conn: 'c4', now: T + 3000, staleBefore: stale(T + 3000) });
    expect(refused).toMatchObject({ ok: false, reason: 'in_use', holder: { instance: 'proc-a', since: T + 10, lastHeartbeatAt: T + 2000 } });
    // proc-a goes silent past the timeout: proc-b takes over, and proc-a's heartbeats no longer count.
    const late = T + 2000 + 20_001;
    expect(await s.claimRunnerInstance(r.id, { instance: 'proc-b', conn: 'c5', now: late, staleBefore: stale(late) })).toEqual({ ok: true });
    expect(await s.touchRunner(r.id, late + 1, { conn: 'c3' })).toBe(false);
    expect(await s.claimRunnerInstance(r.id, { instance: 'proc-a', conn: 'c6', now: late + 2, staleBefore: stale(late + 2) })).toMatchObject({
      ok: false,
      holder: { instance: 'proc-b', since: late },
    });
  });

  it('runner instance: a closed holder frees the runner; older runners without an instance replace and are replaced; revoked is refused', async () => {
    const s = await h.open();
    const r = await newRunner(s, {}, 'freed');
    expect(await s.claimRunnerInstance(r.id, { instance: 'proc-a', conn: 'c1', now: T, staleBefore: stale(T) })).toEqual({ ok: true });
    expect(await s.releaseRunnerInstance(r.id, 'c1')).toBe(true);
    expect((await s.getRunner(r.id))?.connected).toBe(false);
    // Stopped cleanly: the next process connects at once.
    expect(await s.claimRunnerInstance(r.id, { instance: 'proc-b', conn: 'c2', now: T + 10, staleBefore: stale(T + 10) })).toEqual({ ok: true });
    // An older runner (no instance) replaces, as before 0021; and a process with one replaces it.
    expect(await s.claimRunnerInstance(r.id, { instance: null, conn: 'c3', now: T + 20, staleBefore: stale(T + 20) })).toEqual({ ok: true });
    expect(await s.claimRunnerInstance(r.id, { instance: 'proc-c', conn: 'c4', now: T + 30, staleBefore: stale(T + 30) })).toEqual({ ok: true });
    await s.revokeRunner(r.id, T + 40);
    expect(await s.claimRunnerInstance(r.id, { instance: 'proc-c', conn: 'c5', now: T + 50, staleBefore: stale(T + 50) })).toEqual({ ok: false, reason: 'revoked' });
    expect(await s.claimRunnerInstance(r.id + 1000, { instance: 'x', conn: 'c6', now: T + 50, staleBefore: stale(T + 50) })).toEqual({ ok: false, reason: 'revoked' });
  });

  it('runner instance: two processes claiming at once through two store instances: exactly one wins', async () => {
    const s = await h.open();
    const s2 = await h.another(s);
    const r = await newRunner(s, {}, 'raced');
    for (let round = 0; round < 5; round++) {
      const now = T + round * 100_000;
      const got = await Promise.all([
        s.claimRunnerInstance(r.id, { instance: `a${round}`, conn: `ca${round}`, now, staleBefore: stale(now) }),
        s2.claimRunnerInstance(r.id, { instance: `b${round}`, conn: `cb${round}`, now, staleBefore: stale(now) }),
      ]);
      expect(got.filter((g) => g.ok)).toHaveLength(1);
    }
  });

  it('runner names: registration gets NAME-2, NAME-3 when taken by runners that are not revoked; a revoked runner frees its name', async () => {
    const s = await h.open();
    const reg = (name: string) => s.registerRunner({ name, labels: {}, capacity: 1, credentialHash: fakeHash('n'), now: T });
    const a = await reg('build');
    const b = await reg('build');
    const c = await reg('build');
    expect([a.name, b.name, c.name]).toEqual(['build', 'build-2', 'build-3']);
    expect((await reg('Build')).name).toBe('Build'); // names compare exactly
    await s.revokeRunner(b.id, T + 1);
    expect((await reg('build')).name).toBe('build-2');
    const long = 'x'.repeat(63);
    expect([(await reg(long)).name, (await reg(long)).name]).toEqual([long, `${'x'.repeat(61)}-2`]);
  });

  it('runner names: two registrations asking for one name at once through two store instances get different names', async () => {
    const s = await h.open();
    const s2 = await h.another(s);
    const got = await Promise.all([s, s2, s, s2].map((st) => st.registerRunner({ name: 'twin', labels: {}, capacity: 1, credentialHash: fakeHash('t'), now: T })));
    expect(got.map((r) => r.name).sort()).toEqual(['twin', 'twin-2', 'twin-3', 'twin-4']);
  });

  it('runner names: rename keeps a name another live runner has, takes a free one or a revoked runner’s', async () => {
    const s = await h.open();
    const a = await newRunner(s, {}, 'alpha');
    const b = await newRunner(s, {}, 'beta');
    expect(await s.renameRunner(b.id, 'alpha')).toEqual({ renamed: false, reason: 'taken', takenBy: a.id });
    expect((await s.getRunner(b.id))?.name).toBe('beta');
    expect(await s.renameRunner(b.id, 'beta')).toEqual({ renamed: true });
    expect(await s.renameRunner(b.id, 'gamma')).toEqual({ renamed: true });
    expect((await s.getRunner(b.id))?.name).toBe('gamma');
    await s.revokeRunner(a.id, T + 1);
    expect(await s.renameRunner(b.id, 'alpha')).toEqual({ renamed: true });
    expect(await s.renameRunner(a.id, 'delta')).toEqual({ renamed: false, reason: 'unknown' });
    expect(await s.renameRunner(b.id + 1000, 'delta')).toEqual({ renamed: false, reason: 'unknown' });
  });
}

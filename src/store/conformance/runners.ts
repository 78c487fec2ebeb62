import { expect, it } from 'vitest';
import { T, fakeHash, type Harness } from './harness.js';

export function runnerTests(h: Harness): void {
  it('runners: create, find, touch, disconnect, list', async () => {
    const s = await h.open();
    const cred = fakeHash('c');
    const a = await s.createRunner({ name: 'laptop', labels: { os: 'linux', toolchain: 'node' }, capacity: 2, credentialHash: cred, now: T });
    expect(a).toEqual({
      id: a.id,
      name: 'laptop',
      labels: { os: 'linux', toolchain: 'node' },
      capacity: 2,
      version: null,
      connected: false,
      offline: false,
      lastHeartbeatAt: null,
      createdAt: T,
      hold: null,
      revokedAt: null,
      boundLabels: {},
      browserSlots: 1,
      ownerCapacity: null,
      ownerBrowserSlots: null,
    });
    expect(await s.findRunnerByCredentialHash(cred)).toEqual(a);
    expect(await s.findRunnerByCredentialHash(fakeHash('c'))).toBeNull();
    expect(await s.getRunner(a.id)).toEqual(a);
    expect(await s.getRunner(a.id + 1000)).toBeNull();

    await s.touchRunner(a.id, T + 5, { version: '0.1.0', capacity: 3 });
    expect(await s.getRunner(a.id)).toEqual({ ...a, version: '0.1.0', capacity: 3, connected: true, lastHeartbeatAt: T + 5 });

    await s.touchRunner(a.id, T + 9, { labels: { os: 'linux' }, name: 'laptop-2' });
    expect(await s.getRunner(a.id)).toEqual({ ...a, name: 'laptop-2', labels: { os: 'linux' }, version: '0.1.0', capacity: 3, connected: true, lastHeartbeatAt: T + 9 });

    await s.setRunnerDisconnected(a.id, T + 10);
    const afterClose = await s.getRunner(a.id);
    expect(afterClose?.connected).toBe(false);
    expect(afterClose?.lastHeartbeatAt).toBe(T + 9);

    const b = await s.createRunner({ name: 'box', labels: {}, capacity: 1, credentialHash: fakeHash('c'), now: T + 20 });
    expect(b.id).toBeGreaterThan(a.id);
    const list = await s.listRunners();
    expect(list.map((r) => [r.id, r.name])).toEqual([
      [a.id, 'laptop-2'],
      [b.id, 'box'],
    ]);
    await expect(s.createRunner({ name: 'dup', labels: {}, capacity: 1, credentialHash: cred, now: T })).rejects.toThrow();
    await expect(s.createRunner({ name: 'zero', labels: {}, capacity: 0, credentialHash: fakeHash('c'), now: T })).rejects.toThrow(/capacity/);
  });
}

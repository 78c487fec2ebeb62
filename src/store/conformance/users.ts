import { expect, it } from 'vitest';
import type { NewModelCall } from '../types.js';
import { T, fakeHash, newJob, newRunner, type Harness } from './harness.js';

function call(jobId: number, costMicros: number, inputTokens: number, usageKnown = true): NewModelCall {
  return {
    jobId,
    attempt: 1,
    provider: 'scripted',
    model: 'm',
    api: 'anthropic-messages',
    streamed: true,
    httpStatus: 200,
    inputTokens,
    outputTokens: 1,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    usageKnown,
    costMicros,
    startedAt: T,
    durationMs: 1,
  };
}

/** Issue 8: users, sessions, token listing, ledger filters and per-page usage. */
export function userTests(h: Harness): void {
  it('users: create, duplicate name refused, credentials, list, count', async () => {
    const s = await h.open();
    expect(await s.countUsers()).toBe(0);
    const ann = await s.createUser({ name: 'ann', role: 'admin', passwordHash: 'scrypt$x', now: T });
    expect(ann).toEqual({ id: ann.id, name: 'ann', role: 'admin', disabled: false, hasPassword: true, oidc: false, createdAt: T });
    const bob = await s.createUser({ name: 'bob', role: 'member', passwordHash: null, now: T + 1 });
    expect(bob.hasPassword).toBe(false);
    await expect(s.createUser({ name: 'ann', role: 'member', passwordHash: null, now: T })).rejects.toThrow(/taken/);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a bad role on purpose
    await expect(s.createUser({ name: 'eve', role: 'root' as any, passwordHash: null, now: T })).rejects.toThrow(/role/);
    expect(await s.findUserCredentials('ann')).toEqual({ user: ann, passwordHash: 'scrypt$x' });
    expect(await s.findUserCredentials('nobody')).toBeNull();
    expect((await s.listUsers()).map((u) => u.name)).toEqual(['ann', 'bob']);
    expect(await s.countUsers()).toBe(2);
  });

  it('sessions: found while unexpired, gone after delete or expiry', async () => {
    const s = await h.open();
    const u = await s.createUser({ name: 'ann', role: 'member', passwordHash: 'p', now: T });
    const live = fakeHash('s');
    const old = fakeHash('s');
    await s.createSession({ tokenHash: live, userId: u.id, expiresAt: T + 1000, now: T });
    await s.createSession({ tokenHash: old, userId: u.id, expiresAt: T + 10, now: T });
    expect(await s.findSession(live, T + 999)).toEqual({ user: u, expiresAt: T + 1000 });
    expect(await s.findSession(live, T + 1000)).toBeNull(); // expiry is exclusive
    expect(await s.findSession(fakeHash('s'), T)).toBeNull();
    expect(await s.deleteExpiredSessions(T + 10)).toBe(1);
    expect(await s.findSession(old, T)).toBeNull();
    expect(await s.deleteSession(live)).toBe(true);
    expect(await s.deleteSession(live)).toBe(false);
    expect(await s.findSession(live, T)).toBeNull();
  });

  it('api tokens: listed without hashes, deleted', async () => {
    const s = await h.open();
    const a = await s.createApiToken({ name: 'admin', role: 'admin', tokenHash: fakeHash('t'), now: T });
    const b = await s.createApiToken({ name: 'ci', role: 'member', tokenHash: fakeHash('t'), now: T + 1 });
    expect(await s.listApiTokens()).toEqual([a, b]);
    expect(await s.deleteApiToken(b.id)).toBe(true);
    expect(await s.deleteApiToken(b.id)).toBe(false);
    expect(await s.listApiTokens()).toEqual([a]);
  });

  it('ledger: filters by runner and created range, cursor paging; usage for a page', async () => {
    const s = await h.open();
    const r = await newRunner(s, {}, 'box');
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push((await newJob(s, { now: T + i * 1000, agent: i % 2 ? 'b' : 'a' })).id);
    await s.claimJobById(ids[1]!, r, fakeHash('k'), T + 5000);
    await s.claimJobById(ids[3]!, r, fakeHash('k'), T + 5000);
    expect((await s.listJobs({ runnerId: r.id, limit: 10 })).map((j) => j.id)).toEqual([ids[3], ids[1]]);
    expect((await s.listJobs({ createdFrom: T + 1000, createdTo: T + 3000, limit: 10 })).map((j) => j.id)).toEqual([ids[2], ids[1]]);
    expect((await s.listJobs({ agent: 'a', status: 'queued', limit: 10 })).map((j) => j.id)).toEqual([ids[4], ids[2], ids[0]]);
    const p1 = await s.listJobs({ limit: 2 });
    const p2 = await s.listJobs({ limit: 2, before: p1[1]!.id });
    expect([...p1, ...p2].map((j) => j.id)).toEqual([ids[4], ids[3], ids[2], ids[1]]);

    await s.recordModelCall(call(ids[0]!, 1500, 10));
    await s.recordModelCall(call(ids[0]!, 2500, 20, false));
    await s.recordModelCall(call(ids[2]!, 7, 3));
    const m = await s.jobUsageMany([ids[0]!, ids[1]!, ids[2]!]);
    expect(m.get(ids[0]!)).toEqual({ modelCalls: 2, inputTokens: 30, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 4000, estimatedCalls: 1 });
    expect(m.get(ids[1]!)).toEqual({ modelCalls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 0, estimatedCalls: 0 });
    expect(m.get(ids[2]!)?.costMicros).toBe(7);
    expect(await s.jobUsage(ids[0]!)).toEqual(m.get(ids[0]!));
  });
}

// The `updating` mark (runner-updates.ts) on a fake clock: when it lapses, what it notes, and
// how the status rule (views.ts runnerStatus) reads it.
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../core/log.js';
import type { RunnerRow } from '../store/types.js';
import { RunnerUpdates, UPDATE_ACK_MS, UPDATE_AWAY_MS } from './runner-updates.js';
import { runnerStatus } from './views.js';

const T = 1_800_000_000_000;

function tracker() {
  let now = T;
  const notes: Array<[number, string, string]> = [];
  const store = { recordRunnerEvent: (id: number, e: { kind: string; text: string }) => (notes.push([id, e.kind, e.text]), Promise.resolve({} as never)) };
  const u = new RunnerUpdates({ store, log: silentLogger, now: () => now });
  return { u, notes, at: (ms: number) => (now = T + ms) };
}

describe('RunnerUpdates', () => {
  it('a runner that never answers stops counting as updating after UPDATE_ACK_MS, and that is noted', () => {
    const { u, notes, at } = tracker();
    expect(u.begin(1, '0.2.0', '0.1.0', 'admin')).toBe(true);
    expect(u.begin(1, '0.3.0', '0.1.0', 'admin')).toBe(false);
    at(UPDATE_ACK_MS);
    expect(u.has(1)).toBe(true);
    at(UPDATE_ACK_MS + 1);
    expect(u.has(1)).toBe(false);
    expect(notes.map((n) => n[1])).toEqual(['update', 'update_failed']);
    expect(notes[1]![2]).toBe('update to 0.2.0: the runner did not answer within 60 s (an older runner cannot update itself); it takes jobs again');
  });

  it('a runner that answered stays updating while connected, however long it drains; away, for UPDATE_AWAY_MS', () => {
    const { u, at } = tracker();
    u.begin(1, '0.2.0', '0.1.0', 'admin');
    u.report(1, { type: 'runner.update', phase: 'draining', version: '0.2.0' });
    at(6 * 3_600_000);
    expect(u.has(1)).toBe(true);
    u.report(1, { type: 'runner.update', phase: 'restarting', version: '0.2.0' });
    u.disconnected(1);
    at(6 * 3_600_000 + UPDATE_AWAY_MS);
    expect(u.has(1)).toBe(true);
    at(6 * 3_600_000 + UPDATE_AWAY_MS + 1);
    expect(u.has(1)).toBe(false);
  });

  it('hello: with `updating` the mark stays (or is made: a server restart forgot it); without, it ends and a restart is noted', () => {
    const { u, notes } = tracker();
    u.hello(2, '0.2.0', '0.1.0');
    expect(u.has(2)).toBe(true);
    u.report(2, { type: 'runner.update', phase: 'restarting', version: '0.2.0' });
    u.disconnected(2);
    u.hello(2, undefined, '0.2.0');
    expect(u.has(2)).toBe(false);
    expect(notes.at(-1)).toEqual([2, 'update', 'back after the update to 0.2.0: version 0.2.0']);
    u.begin(3, '0.2.0', '0.1.0', 'admin');
    u.report(3, { type: 'runner.update', phase: 'installing', version: '0.2.0' });
    u.hello(3, undefined, '0.1.0');
    expect(notes.at(-1)).toEqual([3, 'update_failed', 'update to 0.2.0 abandoned: the runner came back without it']);
  });

  it('`failed` ends the mark at once, noting the exit code and detail', () => {
    const { u, notes } = tracker();
    u.begin(4, '0.2.0', null, 'admin');
    expect(u.report(4, { type: 'runner.update', phase: 'failed', version: '0.2.0', exitCode: 3, detail: 'npm ERR! 404' })).toBe(true);
    expect(u.has(4)).toBe(false);
    expect(notes.at(-1)).toEqual([4, 'update_failed', 'update to 0.2.0 failed (exit code 3): npm ERR! 404; it takes jobs again']);
    u.report(4, { type: 'runner.update', phase: 'failed', version: '0.2.0', exitCode: null, detail: 'timed out after 600 s' });
    expect(notes.at(-1)![2]).toBe('update to 0.2.0 failed (the command did not exit: killed or not started): timed out after 600 s; it takes jobs again');
  });
});

describe('runnerStatus with the updating mark', () => {
  const row: RunnerRow = { id: 1, name: 'r', labels: {}, capacity: 1, version: '1', connected: true, offline: false, lastHeartbeatAt: T, createdAt: T - 1000, hold: null, revokedAt: null, boundLabels: {}, browserSlots: 1, ownerCapacity: null, ownerBrowserSlots: null };
  it('updating beats busy, holds and a closed connection (it re-executes), not revoked, the sweep or a stale heartbeat', () => {
    expect(runnerStatus(row, 1, T, 20_000, true)).toBe('updating');
    expect(runnerStatus(row, 0, T, 20_000, false)).toBe('online');
    expect(runnerStatus({ ...row, hold: { until: T + 1, reason: 'x', kind: 'manual' } }, 0, T, 20_000, true)).toBe('updating');
    expect(runnerStatus({ ...row, connected: false }, 0, T + 20_000, 20_000, true)).toBe('updating');
    expect(runnerStatus({ ...row, connected: false }, 0, T + 20_001, 20_000, true)).toBe('offline');
    expect(runnerStatus({ ...row, offline: true }, 0, T, 20_000, true)).toBe('offline');
    expect(runnerStatus({ ...row, revokedAt: T }, 0, T, 20_000, true)).toBe('revoked');
  });
});

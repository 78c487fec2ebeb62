import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../core/log.js';
import { Lease, leaseClock, leaseTimes, serverTimeoutMs } from './lease.js';

describe('lease timings', () => {
  it('stop at T − T/10 − min(grace, T/5) after the last confirmation; every process gone T/10 before the server may act', () => {
    expect(leaseTimes(20_000, 10_000)).toEqual({ timeoutMs: 20_000, marginMs: 2000, killGraceMs: 4000, stopAfterMs: 14_000 });
    expect(leaseTimes(1000, 2000)).toEqual({ timeoutMs: 1000, marginMs: 100, killGraceMs: 200, stopAfterMs: 700 });
    expect(leaseTimes(1000, 50)).toEqual({ timeoutMs: 1000, marginMs: 100, killGraceMs: 50, stopAfterMs: 850 });
    expect(leaseTimes(200, 10_000)).toEqual({ timeoutMs: 200, marginMs: 50, killGraceMs: 40, stopAfterMs: 110 });
    expect(() => leaseTimes(0, 10)).toThrow('lease: heartbeat timeout must be positive, got 0');
  });

  it("takes the server's timeout from welcome; an older server's is assumed to be twice the interval (the shortest a server accepts)", () => {
    expect(serverTimeoutMs({ heartbeatIntervalMs: 5000, heartbeatTimeoutMs: 20_000 })).toBe(20_000);
    expect(serverTimeoutMs({ heartbeatIntervalMs: 5000 })).toBe(10_000);
  });

  it('the lease clock counts what either clock counts: a suspend (wall clock only), never a step back', () => {
    let mono = 0;
    let wall = 1_000_000;
    const now = leaseClock(() => mono, () => wall);
    mono += 100;
    wall += 100;
    expect(now()).toBe(100);
    wall += 60_000; // suspended: the monotonic clock stood still
    mono += 5;
    expect(now()).toBe(60_100);
    wall -= 3_600_000; // stepped back: the monotonic clock counts
    mono += 10;
    expect(now()).toBe(60_110);
  });
});

describe('Lease', () => {
  let lease: Lease | null = null;
  afterEach(() => lease?.close());

  const make = (t: { now: number }, expired: Array<{ grace: number; silent: number }>) =>
    new Lease({ graceMs: 2000, now: () => t.now, log: silentLogger, onExpire: (grace, silent) => expired.push({ grace, silent }) });

  it('expires at its stop time, not before; a confirmation renews it; an old one does not', () => {
    const t = { now: 0 };
    const expired: Array<{ grace: number; silent: number }> = [];
    lease = make(t, expired);
    expect(lease.check()).toBe(false); // no welcome yet: nothing to hold
    lease.setTimeoutMs(1000);
    lease.confirm(0);
    t.now = 699;
    expect(lease.check()).toBe(false);
    lease.confirm(500); // a pong for the heartbeat sent at 500
    t.now = 1199;
    expect(lease.check()).toBe(false);
    t.now = 1200;
    expect(lease.check()).toBe(true);
    expect(expired).toEqual([{ grace: 200, silent: 700 }]);
    expect(lease.check()).toBe(true); // once per expiry
    expect(expired).toHaveLength(1);
    lease.confirm(400); // older than what it had: stays expired
    expect(lease.expired).toBe(true);
    lease.confirm(1300); // a welcome after a reconnect
    expect(lease.expired).toBe(false);
    t.now = 2000;
    expect(lease.check()).toBe(true);
    expect(expired).toHaveLength(2);
  });

  it('a process that wakes up after its deadline kills at once (grace 0)', () => {
    const t = { now: 0 };
    const expired: Array<{ grace: number; silent: number }> = [];
    lease = make(t, expired);
    lease.setTimeoutMs(1000);
    lease.confirm(0);
    t.now = 5000; // frozen for 5 s: the timer never got to run
    expect(lease.check()).toBe(true);
    expect(expired).toEqual([{ grace: 0, silent: 5000 }]);
  });

  it('fires by its own timer', async () => {
    const expired: Array<{ grace: number; silent: number }> = [];
    lease = new Lease({ graceMs: 2000, log: silentLogger, onExpire: (grace, silent) => expired.push({ grace, silent }) });
    lease.setTimeoutMs(200); // stop after 110 ms
    const t0 = lease.now();
    lease.confirm(t0);
    await new Promise((r) => setTimeout(r, 60));
    expect(expired).toEqual([]);
    await new Promise((r) => setTimeout(r, 200));
    expect(expired).toHaveLength(1);
    expect(expired[0]!.silent).toBeGreaterThanOrEqual(110);
  });
});

import { describe, expect, it } from 'vitest';
import { backoffDelay, beforeLeaseRunsOut, retryAfterDelay } from './reconnect.js';

describe('reconnect delays', () => {
  it('without spread: min·2^n capped at max, times 0.5–1', () => {
    const p = { minMs: 250, maxMs: 10_000 };
    expect([0, 1, 2, 10].map((n) => backoffDelay(n, p, () => 0))).toEqual([125, 250, 500, 5000]);
    expect([0, 1, 2, 10].map((n) => backoffDelay(n, p, () => 1))).toEqual([250, 500, 1000, 10_000]);
  });

  it('with spread: full jitter over at least the spread window', () => {
    const p = { minMs: 250, maxMs: 10_000, spreadMs: 8000 };
    expect(backoffDelay(0, p, () => 0)).toBe(0);
    expect(backoffDelay(0, p, () => 0.5)).toBe(4000);
    expect(backoffDelay(10, p, () => 0.5)).toBe(5000); // window = max(10000, 8000)
  });

  it('200 runners losing the server at once: no 1-second window holds more than a quarter of the first reconnects', () => {
    // Deterministic pseudo-random (LCG) so the check is repeatable.
    let seed = 42;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const times = Array.from({ length: 200 }, () => backoffDelay(0, { minMs: 250, maxMs: 10_000, spreadMs: 10_000 }, rnd)).sort((a, b) => a - b);
    let worst = 0;
    for (let i = 0, j = 0; i < times.length; i++) {
      while (times[i]! - times[j]! >= 1000) j++;
      worst = Math.max(worst, i - j + 1);
    }
    expect(worst).toBeLessThanOrEqual(50);
  });

  it('with running jobs: at the latest 1 s before the lease runs out, at least 200 ms; else as drawn', () => {
    expect(beforeLeaseRunsOut(9000, null)).toBe(9000);
    expect(beforeLeaseRunsOut(9000, 5000)).toBe(4000);
    expect(beforeLeaseRunsOut(3000, 5000)).toBe(3000);
    expect(beforeLeaseRunsOut(9000, 1100)).toBe(200);
    expect(beforeLeaseRunsOut(9000, 0)).toBe(200);
  });

  it('busy, retry after s: waits s to 2s', () => {
    expect(retryAfterDelay(2, () => 0)).toBe(2000);
    expect(retryAfterDelay(2, () => 1)).toBe(4000);
  });
});

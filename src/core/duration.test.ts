import { describe, expect, it } from 'vitest';
import { parseDurationMs } from './duration.js';

describe('parseDurationMs', () => {
  it('takes s, m, h, d and off', () => {
    expect([parseDurationMs('90s', 'x'), parseDurationMs('15m', 'x'), parseDurationMs('1h', 'x'), parseDurationMs('2D', 'x'), parseDurationMs('off', 'x'), parseDurationMs('0', 'x')]).toEqual([
      90_000, 900_000, 3_600_000, 172_800_000, 0, 0,
    ]);
  });
  it('refuses anything else, naming the setting', () => {
    for (const bad of ['', '15', 'm', '-1m', '1.5h', '1w', '31d', '15 m']) {
      expect(() => parseDurationMs(bad, '--hold-new-runners')).toThrow(`--hold-new-runners must be a duration like 90s, 15m, 1h or 2d (at most 30d), or off; got ${JSON.stringify(bad)}`);
    }
  });
});

/**
 * protocol/budget.ts parseSince: the window of `flotilla costs --since` and `GET /api/costs?since=`.
 * A date or date-time without an offset is UTC in any process time zone (fresh-tester finding:
 * a server with TZ=Asia/Tokyo read `2026-12-07T00:24:00` as 15:24Z the day before), and only
 * ISO-8601 text is taken (Date.parse also took `2026-12-07 PST` and `2026-12-07 (hello)`).
 */
import { describe, expect, it } from 'vitest';
import { parseSince } from './budget.js';

const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);

describe('parseSince', () => {
  it('durations back from now', () => {
    expect(parseSince('30m', NOW)).toBe(NOW - 30 * 60_000);
    expect(parseSince('2w', NOW)).toBe(NOW - 14 * 86_400_000);
    expect(parseSince('0d', NOW)).toBeNull();
  });

  it('dates and date-times: UTC unless they give an offset', () => {
    expect(parseSince('2026-12-07', NOW)).toBe(Date.UTC(2026, 11, 7));
    expect(parseSince('2026-12-07T00:24', NOW)).toBe(Date.UTC(2026, 11, 7, 0, 24));
    expect(parseSince('2026-12-07T00:24:00', NOW)).toBe(Date.UTC(2026, 11, 7, 0, 24));
    expect(parseSince('2026-12-07 09:00', NOW)).toBe(Date.UTC(2026, 11, 7, 9, 0));
    expect(parseSince('2026-12-07T00:24:05.250Z', NOW)).toBe(Date.UTC(2026, 11, 7, 0, 24, 5, 250));
    expect(parseSince('2026-12-07t00:24:05.123456789z', NOW)).toBe(Date.UTC(2026, 11, 7, 0, 24, 5, 123));
    expect(parseSince('2026-12-07T09:00+09:00', NOW)).toBe(Date.UTC(2026, 11, 7, 0, 0));
    expect(parseSince('2026-12-07T00:00:00-05:00', NOW)).toBe(Date.UTC(2026, 11, 7, 5, 0));
  });

  it('the same instant whatever the process time zone', () => {
    const before = process.env.TZ;
    try {
      for (const tz of ['Asia/Tokyo', 'America/New_York', 'UTC']) {
        process.env.TZ = tz;
        expect(parseSince('2026-12-07T00:24:00', NOW), tz).toBe(Date.UTC(2026, 11, 7, 0, 24));
        expect(parseSince('2026-12-07 09:00', NOW), tz).toBe(Date.UTC(2026, 11, 7, 9, 0));
      }
    } finally {
      if (before === undefined) delete process.env.TZ;
      else process.env.TZ = before;
    }
  });

  it('anything that is not ISO-8601 is refused', () => {
    for (const text of ['2026-12-07 (hello)', '2026-12-07 PST', '2026-12-07 GMT+14', '2026-12-07 foo', '2026-12-07 1', '2026-12-07Z', '2026-12-07T25:00', '2026-12-07T10:60', '2026-12-07T10:00:61', '2026-12-07T10', '2026-12-07T10:00+0900', 'Dec 7 2026', '2026/12/07', '2026-02-30', ' 2026-12-07', '1969-12-31']) {
      expect(parseSince(text, NOW), text).toBeNull();
    }
  });
});

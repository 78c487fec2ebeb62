// The jobs list's date filter takes days in the browser's time zone, as its Started column shows
// times (a fresh tester: a job started 19:00 in Los Angeles on the 6th was listed under the 7th,
// the filter reading dates as UTC days). web/src/format.ts localDay.
import { afterEach, describe, expect, it } from 'vitest';
import { localDay, localTimesIn } from '../../web/src/format.js';

const tz = process.env.TZ;
afterEach(() => {
  if (tz === undefined) delete process.env.TZ;
  else process.env.TZ = tz;
});

describe('localDay', () => {
  it('a day in Los Angeles starts at 08:00 UTC in winter; the next day counts the calendar, not 24 h', () => {
    process.env.TZ = 'America/Los_Angeles';
    expect(localDay('2026-12-06')).toEqual({ start: '2026-12-06T08:00:00.000Z', next: '2026-12-07T08:00:00.000Z' });
    // 2026-03-08: clocks go forward, a 23-hour day
    expect(localDay('2026-03-08')).toEqual({ start: '2026-03-08T08:00:00.000Z', next: '2026-03-09T07:00:00.000Z' });
  });
  it('UTC and a zone east of it', () => {
    process.env.TZ = 'UTC';
    expect(localDay('2026-12-07')).toEqual({ start: '2026-12-07T00:00:00.000Z', next: '2026-12-08T00:00:00.000Z' });
    process.env.TZ = 'Pacific/Kiritimati'; // UTC+14
    expect(localDay('2026-12-07')).toEqual({ start: '2026-12-06T10:00:00.000Z', next: '2026-12-07T10:00:00.000Z' });
  });
  it('text that is no date: null', () => {
    for (const bad of ['', '2026-13-01', '2026-02-30', '7 Dec', '2026-12-7']) expect(localDay(bad), bad).toBeNull();
  });
});

describe('localTimesIn', () => {
  it("a server note's UTC times in local time, as the page writes times; the rest of the text as it is (fresh tester: the job page's Waiting row was UTC)", () => {
    process.env.TZ = 'America/Los_Angeles'; // UTC−8 in December
    expect(localTimesIn('every connected runner that matches this job is on hold (vm-local until 2026-12-07T23:17:51.025Z, r2 until 2026-12-08T01:00:00Z), waiting')).toBe(
      'every connected runner that matches this job is on hold (vm-local until 2026-12-07 15:17:51, r2 until 2026-12-07 17:00:00), waiting',
    );
    expect(localTimesIn('no runner matches gpu=h100, waiting')).toBe('no runner matches gpu=h100, waiting');
    expect(localTimesIn('build 2026-12-07T23:17:51 (no zone) stays')).toBe('build 2026-12-07T23:17:51 (no zone) stays');
  });
});

import { describe, expect, it } from 'vitest';
import type { Logger } from '../core/log.js';
import { LogThrottle } from './log-throttle.js';

describe('LogThrottle (injected clock)', () => {
  it('one line per kind per 10 s; the next line counts the ones suppressed in between', () => {
    let now = 1_000_000;
    const t = new LogThrottle(10_000, () => now);
    const lines: Array<[string, Record<string, unknown> | undefined]> = [];
    const log = { warn: (m: string, f?: Record<string, unknown>) => void lines.push([m, f]) } as unknown as Logger;
    t.warn(log, 'unknown', 'bad token', { path: '/v1/messages' }); // logged: first of its kind
    for (let i = 0; i < 5; i++) {
      now += 1_000;
      t.warn(log, 'unknown', 'bad token', { path: '/v1/messages' }); // 1..5 s later: suppressed
    }
    t.warn(log, 'missing', 'no token'); // another kind: its own first line
    now = 1_000_000 + 9_999;
    t.warn(log, 'unknown', 'bad token', { path: '/v1/messages' }); // still inside the window: suppressed (6th)
    now = 1_000_000 + 10_000;
    t.warn(log, 'unknown', 'bad token', { path: '/v1/messages' }); // window over: logged, 6 suppressed
    now += 500;
    t.warn(log, 'unknown', 'bad token', { path: '/v1/messages' }); // new window from the last line: suppressed
    now += 10_000;
    t.warn(log, 'unknown', 'bad token', { path: '/v1/responses' }); // logged, 1 suppressed
    expect(lines).toEqual([
      ['bad token', { path: '/v1/messages' }],
      ['no token', {}],
      ['bad token', { path: '/v1/messages', suppressed: 6 }],
      ['bad token', { path: '/v1/responses', suppressed: 1 }],
    ]);
  });

  it('take(): 0 for a line with nothing suppressed, -1 while throttled, the count after', () => {
    let now = 0;
    const t = new LogThrottle(10_000, () => now);
    expect(t.take('k')).toBe(0);
    expect(t.take('k')).toBe(-1);
    expect(t.take('k')).toBe(-1);
    now = 10_000;
    expect(t.take('k')).toBe(2);
    now = 30_000;
    expect(t.take('k')).toBe(0);
  });
});

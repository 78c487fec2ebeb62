import { describe, expect, it } from 'vitest';
import { effectiveBrowserSlots, parseHolds, slotsUsed, whyNotFits, type HeldSlot } from './capacity.js';

const L = { capacity: 3, browserSlots: 2 };
const ws = (workspace: number): HeldSlot => ({ holds: 'workspace', workspace });

describe('capacity kinds (issue 5)', () => {
  it('workspace jobs take one slot each up to capacity', () => {
    expect(whyNotFits('workspace', 1, [], L)).toBeNull();
    expect(whyNotFits('workspace', 3, [ws(1), ws(2)], L)).toBeNull();
    expect(whyNotFits('workspace', 4, [ws(1), ws(2), ws(3)], L)).toBe('parallel jobs full (3/3)');
  });
  it('two jobs on the same workspace wait for each other', () => {
    expect(whyNotFits('workspace', 1, [ws(1)], L)).toBe('workspace of job 1 is in use');
    expect(whyNotFits('none', 1, [ws(1)], L)).toBe('workspace of job 1 is in use');
  });
  it('a whole-runner job runs alone, and nothing starts beside it', () => {
    expect(whyNotFits('runner', 1, [], L)).toBeNull();
    expect(whyNotFits('runner', 1, [{ holds: 'none', workspace: 2 }], L)).toBe('a whole-runner job needs the runner idle (1 running)');
    const alone: HeldSlot[] = [{ holds: 'runner', workspace: 5 }];
    for (const k of ['runner', 'workspace', 'browser', 'none'] as const) expect(whyNotFits(k, 9, alone, L)).toBe('a whole-runner job is running');
    expect(slotsUsed(alone, L)).toBe(3);
  });
  it('browser jobs need a slot and a browser slot; browser slots never exceed capacity', () => {
    const b = (w: number): HeldSlot => ({ holds: 'browser', workspace: w });
    expect(whyNotFits('browser', 3, [b(1), b(2)], L)).toBe('browser slots full (2/2)');
    expect(whyNotFits('workspace', 3, [b(1), b(2)], L)).toBeNull();
    expect(whyNotFits('browser', 2, [b(1)], { capacity: 1, browserSlots: 4 })).toBe('parallel jobs full (1/1)');
    expect(effectiveBrowserSlots({ capacity: 2, browserSlots: 4 })).toBe(2);
  });
  it('jobs holding nothing take no slot', () => {
    const none: HeldSlot[] = [1, 2, 3, 4].map((w) => ({ holds: 'none', workspace: w }));
    expect(slotsUsed(none, L)).toBe(0);
    expect(whyNotFits('workspace', 9, [...none, ws(5), ws(6)], L)).toBeNull();
    expect(whyNotFits('none', 9, [ws(5), ws(6), ws(7)], L)).toBeNull();
  });
  it('parses stored values, defaulting to workspace', () => {
    expect([parseHolds('runner'), parseHolds('browser'), parseHolds('none'), parseHolds(null), parseHolds('bogus')]).toEqual(['runner', 'browser', 'none', 'workspace', 'workspace']);
  });
});

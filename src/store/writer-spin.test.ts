import { describe, expect, it } from 'vitest';
import { writerSpin } from './writer-spin.js';

describe('writerSpin: the writer thread polls only while batches come within the window', () => {
  it('starts without polling, polls once most recent waits were short, and stops when they are long again', () => {
    const s = writerSpin(0.1);
    expect(s.worth()).toBe(false);
    // share after n short waits from 0: 1 - (7/8)^n; ≥ 0.5 first at n = 6 (0.551; n = 5 gives 0.487)
    for (let i = 0; i < 5; i++) s.observe(0.05);
    expect(s.worth()).toBe(false);
    s.observe(0.1); // the window's edge counts as within
    expect(s.worth()).toBe(true);
    // from 0.551, one long wait: 0.551 × 7/8 = 0.482 < 0.5
    s.observe(0.5);
    expect(s.worth()).toBe(false);
  });

  it('a machine where batches come every 0.5 ms (one client) never polls', () => {
    const s = writerSpin(0.1);
    for (let i = 0; i < 1000; i++) {
      s.observe(0.5);
      expect(s.worth()).toBe(false);
    }
  });
});

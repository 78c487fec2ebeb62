import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { IdleWatch } from './idle.js';

describe('IdleWatch: no output AND no model call for idleMs', () => {
  beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => vi.useRealTimers());

  it('ends after idleMs of silence; output restarts the clock', async () => {
    let idleAt = 0;
    const w = new IdleWatch({ idleMs: 1000, onIdle: () => (idleAt = Date.now()) });
    await vi.advanceTimersByTimeAsync(600);
    w.output(); // at 1_000_600
    await vi.advanceTimersByTimeAsync(900);
    expect(idleAt).toBe(0);
    await vi.advanceTimersByTimeAsync(200);
    expect(idleAt).toBe(1_001_600);
    w.stop();
  });

  it('a call in flight at each report keeps it alive; the last call end counts from when it ended', async () => {
    let idleAt = 0;
    const w = new IdleWatch({ idleMs: 1000, onIdle: () => (idleAt = Date.now()) });
    for (let i = 0; i < 5; i++) {
      await vi.advanceTimersByTimeAsync(500);
      w.model(1, 0); // heartbeat replies: one call in flight
    }
    // At 1_002_500 the call ended 200 ms ago (server clock, relative).
    await vi.advanceTimersByTimeAsync(500);
    w.model(0, 200);
    expect(idleAt).toBe(0);
    await vi.advanceTimersByTimeAsync(700);
    expect(idleAt).toBe(0);
    await vi.advanceTimersByTimeAsync(200);
    expect(idleAt).toBe(1_003_800);
    w.stop();
  });

  it('asks for fresh activity before ending: a call that started since the last report saves the job', async () => {
    let idle = false;
    let asked = 0;
    const w: IdleWatch = new IdleWatch({
      idleMs: 1000,
      onIdle: () => (idle = true),
      refresh: async () => {
        asked++;
        if (asked === 1) w.model(1, 0); // the reply: a call in flight
      },
    });
    await vi.advanceTimersByTimeAsync(1000);
    expect([asked, idle]).toEqual([1, false]);
    await vi.advanceTimersByTimeAsync(1000);
    expect([asked, idle]).toEqual([2, true]);
  });

  it('stop() before the limit: never ends', async () => {
    const onIdle = vi.fn();
    const w = new IdleWatch({ idleMs: 100, onIdle });
    w.stop();
    await vi.advanceTimersByTimeAsync(1000);
    expect(onIdle).not.toHaveBeenCalled();
  });
});

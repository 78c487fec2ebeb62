/**
 * The call-activity notes (activity.ts) stay off a call's critical path (issue 3 speed goals)
 * and still come out in order (issue 4: in_flight must not stick at 1).
 */
import { describe, expect, it } from 'vitest';
import { reserve } from './budget.js';
import type { BudgetStore } from './budget.js';
import type { JobRow } from '../store/types.js';

const job = { id: 7, rootId: 7, parentId: null, attempt: 2 } as JobRow;
const T = 1_800_000_000_000;

/** A store whose notes wait until released by the test (in order); reserve and settle answer at once. */
function slowNotes(failStart = false) {
  const log: string[] = [];
  const pending: Array<() => void> = [];
  const store: BudgetStore = {
    reserveBudget: async () => ({ ok: true, reservationId: 41, budget: { rootId: 7, limitMicros: 100, spentMicros: 0, reservedMicros: 10, remainingMicros: 90 } }),
    settleBudget: async (_root, id, cost) => {
      log.push(`settle ${id} ${cost}`);
      return true;
    },
    noteModelCall: (jobId, attempt, phase) => {
      log.push(`${phase} issued ${jobId}/${attempt}`);
      return new Promise<void>((resolve, reject) =>
        pending.push(() => {
          log.push(`${phase} written`);
          if (failStart && phase === 'start') reject(new Error('disk full'));
          else resolve();
        }),
      );
    },
  };
  return { store, log, release: () => pending.shift()!() };
}

const ticks = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
};

describe('gateway call activity', () => {
  it('the reservation is handed back while the start note is still being written; settle does not wait for the notes', async () => {
    const { store, log, release } = slowNotes();
    const held = await reserve(store, job, 10, T);
    if ('refused' in held) throw new Error('must fit');
    expect(log).toEqual(['start issued 7/2']); // issued, not written: the upstream call may go now
    expect(await held.settle(3)).toBe(true); // resolves with the start note still pending
    expect(log).toEqual(['start issued 7/2', 'settle 41 3']);
    await ticks();
    expect(log).toEqual(['start issued 7/2', 'settle 41 3']); // the end waits for the start
    release();
    await ticks();
    expect(log).toEqual(['start issued 7/2', 'settle 41 3', 'start written', 'end issued 7/2']);
    release();
    await ticks();
    expect(log.at(-1)).toBe('end written');
  });

  it('a refused call ends its note at once (in_flight back to 0), after the start', async () => {
    const { store, log, release } = slowNotes();
    store.reserveBudget = async () => ({ ok: false, budget: { rootId: 7, limitMicros: 100, spentMicros: 95, reservedMicros: 0, remainingMicros: 5 } });
    const held = await reserve(store, job, 10, T);
    expect(held).toMatchObject({ refused: expect.stringMatching(/^budget exhausted: job tree 7/) });
    release();
    await ticks();
    expect(log).toEqual(['start issued 7/2', 'start written', 'end issued 7/2']);
  });

  it('a failed start note neither fails the call nor keeps the end note from being written', async () => {
    const { store, log, release } = slowNotes(true);
    const held = await reserve(store, job, 10, T);
    if ('refused' in held) throw new Error('must fit');
    release(); // start rejects
    await held.settle(0);
    await ticks();
    expect(log).toEqual(['start issued 7/2', 'start written', 'settle 41 0', 'end issued 7/2']);
    expect(await held.settle(0)).toBe(false); // settles once
  });

  it('calls whose start notes share one write (a merging store) each end once, after that write, with their own job', async () => {
    // Like SQLite's notes (sqlite-activity.ts): every note until the write is released shares one promise.
    const log: string[] = [];
    let write: { promise: Promise<void>; resolve: () => void } | null = null;
    const store: BudgetStore = {
      reserveBudget: async (rootId) => ({ ok: true, reservationId: rootId, budget: { rootId, limitMicros: 100, spentMicros: 0, reservedMicros: 10, remainingMicros: 90 } }),
      settleBudget: async () => true,
      noteModelCall: (jobId, attempt, phase) => {
        log.push(`${phase} ${jobId}/${attempt}`);
        if (!write) {
          let resolve!: () => void;
          const promise = new Promise<void>((r) => (resolve = r));
          write = { promise, resolve };
        }
        return write.promise;
      },
    };
    const other = { ...job, id: 8, rootId: 8, attempt: 1 } as JobRow;
    const held = await Promise.all([reserve(store, job, 10, T), reserve(store, job, 10, T), reserve(store, other, 10, T)]);
    for (const h of held) if ('refused' in h) throw new Error('must fit');
    await Promise.all(held.map((h) => ('settle' in h ? h.settle(1) : null)));
    await ticks();
    expect(log).toEqual(['start 7/2', 'start 7/2', 'start 8/1']); // the ends wait for the write
    const first = write!;
    write = null;
    first.resolve();
    await ticks();
    expect(log.slice(3).sort()).toEqual(['end 7/2', 'end 7/2', 'end 8/1']);
  });

  it('a store that hands every note the same settled promise: each call still ends with its own job', async () => {
    const log: string[] = [];
    const done = Promise.resolve();
    const store: BudgetStore = {
      reserveBudget: async (rootId) => ({ ok: true, reservationId: rootId, budget: { rootId, limitMicros: 100, spentMicros: 0, reservedMicros: 10, remainingMicros: 90 } }),
      settleBudget: async () => true,
      noteModelCall: (jobId, attempt, phase) => {
        log.push(`${phase} ${jobId}/${attempt}`);
        return done;
      },
    };
    const other = { ...job, id: 8, rootId: 8, attempt: 1 } as JobRow;
    const [a, b] = await Promise.all([reserve(store, job, 10, T), reserve(store, other, 10, T)]);
    if ('refused' in a || 'refused' in b) throw new Error('must fit');
    await b.settle(1);
    await a.settle(1);
    await ticks();
    expect(log).toEqual(['start 7/2', 'start 8/1', 'end 8/1', 'end 7/2']);
  });
});

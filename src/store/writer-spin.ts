/**
 * Whether the SQLite writer thread (sqlite-writer-worker.ts) polls its port for
 * {@link WRITER_SPIN_MS} after a batch before it sleeps on the doorbell, decided from how the
 * batches came lately. Polling spares the event loop the wake-up of a sleeping thread
 * (Atomics.notify, ~15 µs of its CPU here, more on a busy machine) only when the next batch
 * comes within the window; otherwise it is CPU spent for nothing, on a core the event loop, the
 * upstream and the clients share. Measured on 2 cores (bench/gateway's raw load, 2026-12-06):
 * - at 1 client no batch came within 0.1 ms of the last one's end (a call takes ~0.5 ms), and
 *   polling cost 80–200 µs of CPU per call;
 * - at 64 clients 13 % of the batches that were not already waiting came within the window
 *   (7,102 waiting, 851 caught by polling, 5,555 after a sleep of 0.05–3 ms), and requests/s
 *   was no better with polling (4 interleaved rounds).
 * So the thread polls only while most recent waits were short: an average over about the last
 * {@link SPIN_MEMORY} waits, each counting 1 when the batch came within the window, 0 when not.
 */
export interface WriterSpin {
  /** True when the thread should poll before it sleeps. */
  worth(): boolean;
  /** One wait for a batch that was not already waiting: how long it took to come, ms (the time slept, wake-up included, when the thread slept). */
  observe(waitedMs: number): void;
}

/** How long the thread polls its port before it sleeps, when it polls at all, ms. */
export const WRITER_SPIN_MS = 0.1;
/** About how many recent waits the average remembers (the weight of a new one is 1/SPIN_MEMORY). */
export const SPIN_MEMORY = 8;
/** Polling is worth it while at least this share of recent waits ended within the window. */
export const SPIN_WORTH = 0.5;

/** A {@link WriterSpin} that starts without polling (most stores see a call now and then). */
export function writerSpin(windowMs = WRITER_SPIN_MS): WriterSpin {
  let share = 0;
  return {
    worth: () => share >= SPIN_WORTH,
    observe(waitedMs) {
      share += ((waitedMs <= windowMs ? 1 : 0) - share) / SPIN_MEMORY;
    },
  };
}

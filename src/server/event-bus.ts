import type { JobEvent } from '../protocol/index.js';

/**
 * What subscribers of one job receive: newly stored events (in seq order), or an empty list
 * when only the job row changed (status transition) and followers should re-read it.
 */
export type JobBusListener = (events: readonly JobEvent[]) => void;

/**
 * In-process pub/sub keyed by job id. Used to wake SSE followers as soon as this server
 * stores events or changes a job; events stored by another replica arrive through the
 * followers' store poll instead. Listener errors are contained (they never reach publishers).
 */
export class EventBus {
  private readonly listeners = new Map<number, Set<JobBusListener>>();
  private readonly taps: Array<(jobId: number, events: readonly JobEvent[]) => void> = [];

  /**
   * Registers `fn` for every job's non-empty publishes (server-side reactions to stored events,
   * e.g. server/paused-exit.ts; not for followers). Errors are contained as for listeners.
   */
  tap(fn: (jobId: number, events: readonly JobEvent[]) => void): void {
    this.taps.push(fn);
  }

  /** Registers `fn` for `jobId`; returns the unsubscribe function. */
  subscribe(jobId: number, fn: JobBusListener): () => void {
    let set = this.listeners.get(jobId);
    if (!set) {
      set = new Set();
      this.listeners.set(jobId, set);
    }
    set.add(fn);
    return () => {
      const s = this.listeners.get(jobId);
      if (!s) return;
      s.delete(fn);
      if (s.size === 0) this.listeners.delete(jobId);
    };
  }

  /** Delivers `events` (possibly empty: "job changed") to every listener of `jobId`. */
  publish(jobId: number, events: readonly JobEvent[] = []): void {
    if (events.length) {
      for (const fn of this.taps) {
        try {
          fn(jobId, events);
        } catch {
          // a broken tap must not break the publisher
        }
      }
    }
    const set = this.listeners.get(jobId);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(events);
      } catch {
        // a broken follower must not break the publisher
      }
    }
  }

  /** Number of jobs with at least one listener (for tests and diagnostics). */
  get size(): number {
    return this.listeners.size;
  }
}

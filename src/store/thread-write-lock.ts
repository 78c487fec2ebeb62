/**
 * The write lock between a SQLite store's own connection (the event loop's thread) and its
 * writer thread's (sqlite-writer.ts): SQLite lets one connection write at a time, and a
 * connection that finds the file locked waits in SQLite's busy handler — a sleep of 1 ms and
 * more that would block the event loop. So each side takes this lock before it writes, and the
 * other waits for it: the writer thread blocking ({@link Atomics.wait}, its own thread), the
 * event loop without blocking ({@link Atomics.waitAsync}). Neither then meets a busy file.
 *
 * The lock is two Int32 words in a SharedArrayBuffer (both threads see the same memory):
 * `[OWNER]` is 0 (free), {@link MAIN} or {@link WRITER}; `[MAIN_WAITING]` is 1 while the event
 * loop waits for it. The writer thread does not take it again while the event loop waits
 * (a writer committing batch after batch would otherwise win every time: it retakes the lock
 * within microseconds, before the event loop's wake-up runs).
 */
const OWNER = 0;
const MAIN_WAITING = 1;
/** {@link OWNER} when the event loop's connection holds the lock. */
const MAIN = 1;
/** {@link OWNER} when the writer thread's connection holds the lock. */
const WRITER = 2;

/** Atomics.waitAsync (ES2024; in Node since 16, not in this project's ES2022 lib types). */
const waitAsync = (Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number, ms: number): { async: false; value: string } | { async: true; value: Promise<string> } }).waitAsync;

/** The memory of one lock: pass it to the writer thread (workerData), which opens it with {@link writerSide}. */
export function newLockMemory(): SharedArrayBuffer {
  return new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
}

/** The error a side gets when the other held the lock for longer than it waits (SQLite's own busy message). */
export class WriteLockTimeout extends Error {
  constructor(ms: number) {
    super(`database is locked (the other SQLite connection of this process held the write lock for ${ms} ms)`);
    this.name = 'WriteLockTimeout';
  }
}

/** The event loop's side of the lock. */
export interface MainWriteLock {
  /** Takes the lock when it is free now. @returns whether it was taken. */
  tryAcquire(): boolean;
  /**
   * Takes the lock, waiting without blocking the event loop while the writer thread holds it.
   * Callers on the event loop are served one after another (not reentrant: a caller holding it
   * must release it before another of its own takes it).
   * @throws (rejects with) {@link WriteLockTimeout} after `timeoutMs`.
   */
  acquire(timeoutMs: number): Promise<void>;
  /** Releases the lock this side holds and wakes the other. */
  release(): void;
  /** Frees the lock when the writer thread holds it: that thread is gone (it died holding it). */
  forceReleaseWriter(): void;
}

/** The event loop's side of the lock in `memory` ({@link newLockMemory}). */
export function mainSide(memory: SharedArrayBuffer): MainWriteLock {
  const w = new Int32Array(memory);
  let waiters = 0;
  const tryAcquire = () => Atomics.compareExchange(w, OWNER, 0, MAIN) === 0;
  const wakeWriter = () => {
    Atomics.store(w, MAIN_WAITING, 0);
    Atomics.notify(w, MAIN_WAITING);
  };
  return {
    tryAcquire,
    async acquire(timeoutMs) {
      if (tryAcquire()) return;
      const deadline = Date.now() + timeoutMs;
      waiters++;
      Atomics.store(w, MAIN_WAITING, 1);
      try {
        for (;;) {
          const owner = Atomics.load(w, OWNER);
          if (owner === 0 && tryAcquire()) return;
          const left = deadline - Date.now();
          if (left <= 0) throw new WriteLockTimeout(timeoutMs);
          // Resolves when the owner releases (notify), at once when it changed meanwhile.
          const r = waitAsync(w, OWNER, owner, left);
          if (r.async) await r.value;
        }
      } finally {
        if (--waiters === 0) wakeWriter();
      }
    },
    release() {
      Atomics.store(w, OWNER, 0);
      Atomics.notify(w, OWNER);
    },
    forceReleaseWriter() {
      if (Atomics.compareExchange(w, OWNER, WRITER, 0) === WRITER) Atomics.notify(w, OWNER);
    },
  };
}

/** The writer thread's side of the lock. */
export interface WriterWriteLock {
  /** Takes the lock, blocking this thread while the event loop holds or waits for it. @throws {@link WriteLockTimeout} after `timeoutMs`. */
  acquire(timeoutMs: number): void;
  /** Releases it and wakes the event loop. */
  release(): void;
}

/** The writer thread's side of the lock in `memory`. */
export function writerSide(memory: SharedArrayBuffer): WriterWriteLock {
  const w = new Int32Array(memory);
  return {
    acquire(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const left = deadline - Date.now();
        if (left <= 0) throw new WriteLockTimeout(timeoutMs);
        if (Atomics.load(w, MAIN_WAITING) === 1) {
          Atomics.wait(w, MAIN_WAITING, 1, left);
          continue;
        }
        const owner = Atomics.compareExchange(w, OWNER, 0, WRITER);
        if (owner === 0) return;
        Atomics.wait(w, OWNER, owner, left);
      }
    },
    release() {
      Atomics.store(w, OWNER, 0);
      Atomics.notify(w, OWNER);
    },
  };
}

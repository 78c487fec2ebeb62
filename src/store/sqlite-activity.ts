import type BetterSqlite3 from 'better-sqlite3';
import type { GroupCommit } from './sqlite-group-commit.js';

/**
 * Least time between two activity writes of one (job, attempt) on SQLite, ms. The notes made
 * meanwhile are merged into the next write. The idle limit they feed counts in seconds (issue
 * 4); an upsert per note cost the gateway ~45 µs of CPU per call at 1 client (two WAL frames and
 * a statement per call: bench/gateway-cpu.bench.js).
 */
export const ACTIVITY_WRITE_INTERVAL_MS = 100;

/** What {@link sqliteActivityNotes} returns. */
export interface ActivityNotes {
  /**
   * Notes a model call's start or end (the semantics of store/model-activity.ts noteModelCall;
   * the caller validated the arguments).
   * @returns once the note is written (within {@link ACTIVITY_WRITE_INTERVAL_MS} of the key's
   *   previous write, or in the next group commit when there was none that recent).
   * @throws (rejects with) the write's error.
   */
  note(jobId: number, attempt: number, phase: 'start' | 'end', now: number): Promise<void>;
  /** Writes every note not written yet now (before a read of the activity, or a close). */
  flush(): Promise<void>;
}

type Counts = { jobId: number; attempt: number; starts: number; ends: number; now: number };
type Pending = { counts: Counts; done: Promise<void>; write: () => Promise<void> };

/**
 * Model-call activity notes on SQLite (store/model-activity.ts), by the prepared `upsert`
 * (parameters `@jobId, @attempt, @starts, @ends, @now`) in the group commit. The notes of one
 * (job, attempt) are merged into ONE upsert — ends first (each belongs to a start written
 * earlier, since the gateway issues a call's end only after its start is written), then starts:
 * the result of applying them one by one — and written at most once per `intervalMs`: the
 * first note after a quiet spell joins the next group commit, the ones after it wait for the
 * end of the interval (an unref'd timer, one per key written recently). Reads go through
 * {@link ActivityNotes.flush} first, so this store always reads its own notes; another
 * connection sees them at most `intervalMs` late.
 */
export function sqliteActivityNotes(upsert: BetterSqlite3.Statement, group: GroupCommit, intervalMs = ACTIVITY_WRITE_INTERVAL_MS): ActivityNotes {
  /** Notes not written yet, by key. */
  const pending = new Map<string, Pending>();
  /** Keys written less than `intervalMs` ago: their next notes wait for the timer. */
  const cooling = new Map<string, NodeJS.Timeout>();

  /** `key` was just written: its next notes wait `intervalMs` (then the timer writes them). */
  const cool = (key: string): void => {
    const before = cooling.get(key);
    if (before) clearTimeout(before);
    const t = setTimeout(() => {
      cooling.delete(key);
      const p = pending.get(key);
      if (p) void p.write().catch(() => undefined); // its callers get the error
    }, intervalMs);
    t.unref();
    cooling.set(key, t);
  };

  const entry = (key: string, counts: Counts): Pending => {
    let resolve!: () => void;
    let reject!: (e: unknown) => void;
    const done = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // a caller may drop it (the gateway's notes are advisory): its failure is not unhandled
    done.catch(() => undefined);
    let started: Promise<void> | null = null;
    const p: Pending = {
      counts,
      done,
      // once, whoever issues it (the first note, the timer or flush()): one group commit
      write: () => {
        if (!started) {
          started = group.run(() => {
            // Leaves `pending` when its batch runs: a later note goes into the next write.
            if (pending.get(key) === p) pending.delete(key);
            cool(key);
            upsert.run(counts);
          });
          started.then(resolve, reject);
        }
        return started;
      },
    };
    return p;
  };

  return {
    note(jobId, attempt, phase, now) {
      const key = `${jobId}:${attempt}`;
      let p = pending.get(key);
      if (!p) {
        p = entry(key, { jobId, attempt, starts: 0, ends: 0, now });
        pending.set(key, p);
        if (!cooling.has(key)) void p.write().catch(() => undefined);
      }
      if (phase === 'start') p.counts.starts++;
      else p.counts.ends++;
      if (now > p.counts.now) p.counts.now = now;
      // the entry's own promise, shared by every note merged into it: no promise per note waits
      // on it for up to ACTIVITY_WRITE_INTERVAL_MS (at thousands of calls a second, such waiters
      // outlived young-generation collections and made them dear: bench/gateway-cpu.bench.js)
      return p.done;
    },
    async flush() {
      await Promise.all([...pending.values()].map((p) => p.write().catch(() => undefined)));
    },
  };
}

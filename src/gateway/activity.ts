import type { JobRow, Store } from '../store/types.js';

/** The Store method the gateway notes call activity with (optional: test stores may lack it). */
export type ActivityStore = Partial<Pick<Store, 'noteModelCall'>>;

/** A call's activity note: {@link CallActivity.end} notes its end. */
export interface CallActivity {
  /**
   * Notes the call's end at `Date.now()` (epoch ms); acts once. Returns at once: the write is
   * issued now when the start note is written (on SQLite it joins the group commit of whatever
   * the caller writes in the same turn, e.g. the call's settle), else as soon as it is.
   */
  end(): void;
}

/**
 * Ends waiting for their start note's write, by that write's promise. A store that merges the
 * notes of many calls into one write returns the same promise for all of them (SQLite,
 * sqlite-activity.ts: one write per job attempt at most every 100 ms), so the calls of one
 * write share one entry and one reaction, instead of a chain of promises per call held until
 * the write (at thousands of calls a second these outlived young-generation collections and
 * made them dear: bench/gateway-cpu.bench.js).
 */
type StartWrite = { jobId: number; attempt: number; written: boolean; ends: number; at: number };
const startWrites = new WeakMap<Promise<void>, StartWrite>();

/**
 * Notes that a model call of `job` (its current attempt) started at `now` (epoch ms), for the
 * runner's idle limit ("no output and no model call for N seconds", issue 4): the runner hub
 * reads it back from the store, so it works whichever replica serves the call.
 * The writes are not awaited — they stay off the call's critical path (issue 3 speed goals):
 * the idle limit counts in seconds, and the store makes the two notes in order (the end note
 * is issued only once the start note is written, so in_flight never sticks at 1).
 * Never throws or rejects: activity is advisory, so a failed write loses only an idle-clock
 * reset and never fails the model call.
 */
export function noteCallStart(store: ActivityStore, job: JobRow, now: number): CallActivity {
  if (!store.noteModelCall) return NO_ACTIVITY;
  const jobId = job.id;
  const attempt = job.attempt;
  let started: Promise<void>;
  try {
    started = store.noteModelCall(jobId, attempt, 'start', now);
  } catch {
    return NO_ACTIVITY;
  }
  let w = startWrites.get(started);
  // shared only by notes of the same attempt (a store could hand every note one settled promise)
  if (w === undefined || w.jobId !== jobId || w.attempt !== attempt) {
    const entry: StartWrite = { jobId, attempt, written: false, ends: 0, at: 0 };
    w = entry;
    if (!startWrites.has(started)) startWrites.set(started, entry);
    // written or failed: the ends that waited for it are issued (a failed start write is
    // absorbed by the store's clamp at 0, store/model-activity.ts)
    const issue = () => {
      entry.written = true;
      for (; entry.ends > 0; entry.ends--) noteEnd(store, jobId, attempt, entry.at);
    };
    started.then(issue, issue);
  }
  const write = w;
  let ended = false;
  return {
    end() {
      if (ended) return;
      ended = true;
      const at = Date.now();
      if (write.written) return noteEnd(store, jobId, attempt, at);
      write.ends++;
      if (at > write.at) write.at = at;
    },
  };
}

const NO_ACTIVITY: CallActivity = { end() {} };
const ignore = () => undefined;
/** End-note promises whose failure is already ignored: one handler per write, not per call (see {@link startWrites}). */
const ignored = new WeakSet<Promise<void>>();

/** Notes a call's end; its failure is ignored (advisory). */
function noteEnd(store: ActivityStore, jobId: number, attempt: number, at: number): void {
  try {
    const ended = store.noteModelCall!(jobId, attempt, 'end', at);
    if (!ignored.has(ended)) {
      ignored.add(ended);
      ended.catch(ignore);
    }
  } catch {
    // advisory
  }
}

import type { JobRow, Store } from '../store/types.js';

/** The Store method the gateway notes call activity with (optional: test stores may lack it). */
export type ActivityStore = Partial<Pick<Store, 'noteModelCall'>>;

/** A call's activity note: {@link CallActivity.end} notes its end. */
export interface CallActivity {
  /**
   * Notes the call's end at `Date.now()` (epoch ms); acts once. Returns at once: the write is
   * issued now (on SQLite it joins the group commit of whatever the caller writes in the same
   * turn, e.g. the call's settle) and ordered after the start note.
   */
  end(): void;
}

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
  const note = store.noteModelCall?.bind(store);
  if (!note) return { end() {} };
  const started = note(job.id, job.attempt, 'start', now).catch(() => undefined);
  let ended = false;
  return {
    end() {
      if (ended) return;
      ended = true;
      const at = Date.now();
      void started.then(() => note(job.id, job.attempt, 'end', at)).catch(() => undefined);
    },
  };
}

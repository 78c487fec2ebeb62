import type { JobRow, Store } from '../store/types.js';

/** The Store method the gateway notes call activity with (optional: test stores may lack it). */
export type ActivityStore = Partial<Pick<Store, 'noteModelCall'>>;

/**
 * Notes that a model call of `job` (its current attempt) started at `now` (epoch ms), for the
 * runner's idle limit ("no output and no model call for N seconds", issue 4): the runner hub
 * reads it back from the store, so it works whichever replica serves the call.
 * @returns the function that notes the call's end (at its own `Date.now()`); it acts once.
 * Never throws: activity is advisory, so a failed write loses only an idle-clock reset and
 * never fails the model call.
 */
export async function noteCallStart(store: ActivityStore, job: JobRow, now: number): Promise<() => Promise<void>> {
  const note = store.noteModelCall?.bind(store);
  if (!note) return async () => {};
  await note(job.id, job.attempt, 'start', now).catch(() => undefined);
  let ended = false;
  return async () => {
    if (ended) return;
    ended = true;
    await note(job.id, job.attempt, 'end', Date.now()).catch(() => undefined);
  };
}

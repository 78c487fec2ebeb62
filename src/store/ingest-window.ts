import { num, numOrNull } from './codec.js';
import type { TaskSelect } from './tasks.js';
import type { NewDelivery, WindowDecision } from './tasks-types.js';

/** What one event does to its task (see {@link noteOnTask}). */
export interface EventEffect {
  /** The event is older than the newest one the task saw (`last_event_at`). */
  stale: boolean;
  /** The coalescing decision; null when not noted (no `coalesce`, stale with `unless_stale`, or the task neither idle nor running). */
  window: WindowDecision;
  /** Columns to write on the task row (epoch ms values): `last_event_at`, `window_until`, `trailing_due_at`, `updated_at`. Empty: nothing changes. */
  set: Partial<Record<'last_event_at' | 'window_until' | 'trailing_due_at' | 'updated_at', number>>;
}

/**
 * The effect of delivery `d`'s event on task `row` as read under its lock (issue 7), without
 * writing anything: `last_event_at` only moves forward (an older event is `stale`); with
 * `d.coalesce`, on an `idle` or `running` task, the first event after the window ends opens a
 * window until `now + coalesce_ms` (`wake`), a later one sets the trailing wake at the
 * window's end (`coalesced`, kept when already set) — the rule of TaskStore.noteTaskEvent,
 * applied in the ingest transaction. Shared by the one-delivery and the batch ingest so both
 * decide alike.
 */
export function noteOnTask(row: Pick<TaskSelect, 'status' | 'coalesce_ms' | 'window_until' | 'trailing_due_at' | 'last_event_at'>, d: NewDelivery): EventEffect {
  const last = numOrNull(row.last_event_at);
  const stale = last !== null && d.event.occurredAt < last;
  const set: EventEffect['set'] = {};
  if (!stale) set.last_event_at = d.event.occurredAt;
  let window: WindowDecision = null;
  if (d.coalesce && (row.status === 'idle' || row.status === 'running') && !(stale && d.coalesce === 'unless_stale')) {
    const until = numOrNull(row.window_until);
    if (until === null || until <= d.now) {
      set.window_until = d.now + num(row.coalesce_ms);
      set.updated_at = d.now;
      window = { decision: 'wake' };
    } else {
      const due = numOrNull(row.trailing_due_at) ?? until;
      set.trailing_due_at = due;
      window = { decision: 'coalesced', trailingDueAt: due };
    }
  }
  return { stale, window, set };
}

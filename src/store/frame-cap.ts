import { capEvent, capJson } from '../core/event-cap.js';
import { MAX_EVENT_DATA_BYTES, type EventBody, type JobResult } from '../protocol/index.js';
import type { FrameEvent, FrameMove } from './runner-frame.js';

/**
 * The per-event size cap where the server stores events (protocol/events.ts
 * MAX_EVENT_DATA_BYTES, core/event-cap.ts). runner-frame.ts frameSql calls these for every
 * `job.events` frame (events.ts for its appends), so both engines' paths (SQLite's prepared
 * one, PostgreSQL's one statement and its batches, the transaction path) store only what they
 * return. A runner that ignores the cap (an old one, or a frame written by hand, up to the
 * hub's 16 MiB) loses nothing else: its frame is accepted and acknowledged, only the long
 * strings are cut.
 */

/** `e` with its data cut to the cap (the same object when it fits). */
export function capFrameEvent(e: FrameEvent): FrameEvent {
  return capEvent(e, MAX_EVENT_DATA_BYTES);
}

/** A server-made event cut to the cap, as events.ts appendServerEvent stores it (a status message may quote a runner's text, e.g. its reason for refusing a job). */
export function capServerEvent(e: EventBody): EventBody {
  return capEvent(e, MAX_EVENT_DATA_BYTES);
}

/**
 * The frame's move with what it writes to the job row from the runner's `job.finished`
 * (`error`, `endReason`, `result`) cut to the cap together, as that event's data is: the job
 * row never holds more than the event. The same object when nothing is cut; undefined stays.
 */
export function capFrameMove(move: FrameMove | undefined): FrameMove | undefined {
  if (!move || (move.error == null && move.endReason == null && move.result == null)) return move;
  const from = { endReason: move.endReason, error: move.error, result: move.result };
  const cut = capJson(from, MAX_EVENT_DATA_BYTES) as { endReason?: string | null; error?: string | null; result?: JobResult | null };
  return cut === from ? move : { ...move, ...cut };
}

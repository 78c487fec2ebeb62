import { capEvent } from '../core/event-cap.js';
import type { EventBody, RunnerToServer, UploadedEvent } from '../protocol/index.js';

/** Most events in one `job.events` frame (the protocol allows 1000). */
export const MAX_BATCH_EVENTS = 200;
/** Soft cap on the JSON size of one batch, bytes (a single bigger event still goes alone). */
export const MAX_BATCH_BYTES = 1024 * 1024;
/**
 * Most events sent and not yet acknowledged (a window, as TCP's): {@link Outbox.nextBatch} sends
 * no more until acks come back. Without it a job printing 200,000 lines had ~1,000 frames queued
 * at the server ahead of the runner's heartbeat, which the server then read 20 s late and took
 * the runner for silent (its jobs lost; on `flotilla up`, whose runner shares the server's
 * process, every runner's: a fresh tester's finding). 5 full batches: at 50 ms of round trip
 * still 20,000 events a second.
 */
export const MAX_IN_FLIGHT_EVENTS = 5 * MAX_BATCH_EVENTS;

type JobEventsFrame = Extract<RunnerToServer, { type: 'job.events' }>;

/**
 * The events of one job attempt, numbered `rseq` = 1, 2, 3, ... and kept until the server
 * acknowledges them (`ack.upTo`). Events go out in rseq order, in batches, at most
 * {@link MAX_IN_FLIGHT_EVENTS} unacknowledged; after a reconnect ({@link rewind}) every
 * unacknowledged event is sent again, in order, before newer ones. Every operation is O(1) in
 * the number of events held (a job printing 200,000 lines spent 60 % of the runner's time in
 * `Array.shift` and `findIndex` over them): the events not acknowledged are `pending[head..]`,
 * rseq `acked + 1` at `head`, the array compacted once most of it is acknowledged.
 */
export class Outbox {
  private pending: UploadedEvent[] = [];
  /** Index in `pending` of the first event not acknowledged (rseq `acked + 1`). */
  private head = 0;
  private nextRseq = 1;
  /** Highest rseq the server acknowledged. */
  private acked = 0;
  /** Highest rseq sent on the current connection. */
  private sent = 0;
  private finishedRseq: number | null = null;
  /** Set by {@link end}: the last rseq of an attempt that ended without `job.finished`. */
  private endedRseq: number | null = null;

  constructor(
    readonly jobId: number,
    readonly attempt: number,
  ) {}

  /**
   * Adds an event, its data cut to the per-event size cap (protocol/events.ts
   * MAX_EVENT_DATA_BYTES, core/event-cap.ts: a 15 MB log line is never uploaded whole); returns
   * its rseq. `at` defaults to now (ISO-8601).
   * @throws Error when the attempt already has its `job.finished` event, or was {@link end}ed.
   */
  push(body: EventBody, at: Date = new Date()): number {
    if (this.finishedRseq !== null) throw new Error(`job ${this.jobId} attempt ${this.attempt}: event after job.finished`);
    if (this.endedRseq !== null) throw new Error(`job ${this.jobId} attempt ${this.attempt}: event after its end`);
    const rseq = this.nextRseq++;
    this.pending.push({ ...capEvent(body), rseq, at: at.toISOString() } as UploadedEvent);
    if (body.type === 'job.finished') this.finishedRseq = rseq;
    return rseq;
  }

  /** The server stored every event up to `upTo`: forget them. Stale or future acks are clamped. */
  ack(upTo: number): void {
    const to = Math.min(upTo, this.nextRseq - 1);
    if (to <= this.acked) return;
    this.head += to - this.acked; // rseq are consecutive: pending[head] is rseq acked + 1
    this.acked = to;
    if (this.sent < to) this.sent = to;
    // drop what is acknowledged once it is most of the array (amortised O(1) an event)
    if (this.head >= 1024 && this.head * 2 >= this.pending.length) {
      this.pending = this.pending.slice(this.head);
      this.head = 0;
    }
  }

  /** A new connection: everything not acknowledged must be sent again. */
  rewind(): void {
    this.sent = this.acked;
  }

  /**
   * The next frame to send (events after the last sent one, at most {@link MAX_BATCH_EVENTS}
   * and about {@link MAX_BATCH_BYTES}), marking them sent; null when nothing is left to send, or
   * while {@link MAX_IN_FLIGHT_EVENTS} sent events wait for their ack (the caller sends again
   * when an ack comes).
   */
  nextBatch(): JobEventsFrame | null {
    const room = MAX_IN_FLIGHT_EVENTS - (this.sent - this.acked);
    const start = this.head + (this.sent - this.acked);
    if (room <= 0 || start >= this.pending.length) return null;
    const events: UploadedEvent[] = [];
    let bytes = 0;
    for (let i = start; i < this.pending.length && events.length < Math.min(MAX_BATCH_EVENTS, room); i++) {
      const e = this.pending[i] as UploadedEvent;
      const size = JSON.stringify(e).length;
      if (events.length > 0 && bytes + size > MAX_BATCH_BYTES) break;
      events.push(e);
      bytes += size;
    }
    this.sent = (events[events.length - 1] as UploadedEvent).rseq;
    return { type: 'job.events', jobId: this.jobId, attempt: this.attempt, events };
  }

  /** Highest rseq acknowledged by the server. */
  get ackedUpTo(): number {
    return this.acked;
  }

  /** Events pushed so far (the last rseq). */
  get lastRseq(): number {
    return this.nextRseq - 1;
  }

  /** Events not yet acknowledged. */
  get unacked(): number {
    return this.pending.length - this.head;
  }

  /**
   * The attempt ended without `job.finished` (given up, job-runner.ts JobRun.lose): no event
   * follows; {@link done} once every event pushed so far is acknowledged.
   */
  end(): void {
    this.endedRseq ??= this.nextRseq - 1;
  }

  /** True once `job.finished` was pushed (or the outbox {@link end}ed) and the server acknowledged every event up to it (the outbox can go). */
  get done(): boolean {
    const last = this.finishedRseq ?? this.endedRseq;
    return last !== null && this.acked >= last;
  }
}

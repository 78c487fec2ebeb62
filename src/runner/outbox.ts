import { capEvent } from '../core/event-cap.js';
import type { EventBody, RunnerToServer, UploadedEvent } from '../protocol/index.js';

/** Most events in one `job.events` frame (the protocol allows 1000). */
export const MAX_BATCH_EVENTS = 200;
/** Soft cap on the JSON size of one batch, bytes (a single bigger event still goes alone). */
export const MAX_BATCH_BYTES = 1024 * 1024;

type JobEventsFrame = Extract<RunnerToServer, { type: 'job.events' }>;

/**
 * The events of one job attempt, numbered `rseq` = 1, 2, 3, ... and kept until the server
 * acknowledges them (`ack.upTo`). Events go out in rseq order, in batches; after a reconnect
 * ({@link rewind}) every unacknowledged event is sent again, in order, before newer ones.
 */
export class Outbox {
  private readonly pending: UploadedEvent[] = [];
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
    this.acked = to;
    while (this.pending.length > 0 && (this.pending[0] as UploadedEvent).rseq <= to) this.pending.shift();
    if (this.sent < to) this.sent = to;
  }

  /** A new connection: everything not acknowledged must be sent again. */
  rewind(): void {
    this.sent = this.acked;
  }

  /**
   * The next frame to send (events after the last sent one, at most {@link MAX_BATCH_EVENTS}
   * and about {@link MAX_BATCH_BYTES}), marking them sent; null when nothing is left to send.
   */
  nextBatch(): JobEventsFrame | null {
    const start = this.pending.findIndex((e) => e.rseq > this.sent);
    if (start === -1) return null;
    const events: UploadedEvent[] = [];
    let bytes = 0;
    for (let i = start; i < this.pending.length && events.length < MAX_BATCH_EVENTS; i++) {
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
    return this.pending.length;
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

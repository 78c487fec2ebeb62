import { cutReason, onCut } from './live-calls.js';
import type { CallSignal } from './reply.js';

/**
 * The signal a call's upstream request runs under. A stream's is the call's own: when its
 * client goes away the upstream is aborted (the model stops writing; what passed is charged,
 * meter.ts). A non-streamed call's upstream request is aborted only when the gateway cuts the
 * call (live-calls.ts: its job's attempt ended, the server stops), not when its client goes
 * away: its reply is read to the end and the call charged what the provider reports (issue 3:
 * "read the upstream to its end, or charge an estimate marked as one"). A provider may serve
 * and bill a non-streamed request whose connection dropped, and a client that hung up just
 * before the reply was charged its input and 1 output token (fresh-tester finding: a budget
 * hole any harness could fall into). No new attempt starts once the client is gone (retry.ts
 * watches the call's own signal).
 */
export function upstreamSignal(signal: CallSignal, streamed: boolean): CallSignal {
  return streamed ? signal : new CutOnlySignal(signal);
}

/** Aborted when the gateway cuts the call of `source` (live-calls.ts onCut: before or after its client went away), not by its client going away. */
class CutOnlySignal implements CallSignal {
  aborted = false;
  private listeners: Array<() => void> = [];

  constructor(source: CallSignal) {
    if (cutReason(source) !== undefined) this.aborted = true;
    else onCut(source, () => this.cut());
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted && !this.listeners.includes(listener)) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

  private cut(): void {
    if (this.aborted) return;
    this.aborted = true;
    for (const l of this.listeners.splice(0)) l();
  }
}

import { describe, expect, it } from 'vitest';
import type { UploadedEvent } from '../protocol/index.js';
import { frameMove } from './frame-move.js';
import { withChildResults } from './tree-result.js';

const at = '2027-01-15T08:00:00.000Z';
const started = (rseq: number, sessionId?: string): UploadedEvent => ({ type: 'harness.started', data: { harness: 'command', pid: 7, ...(sessionId ? { sessionId } : {}) }, rseq, at });
const msg = (rseq: number): UploadedEvent => ({ type: 'message', data: { role: 'assistant', text: 'hi' }, rseq, at });
type Finished = Extract<UploadedEvent, { type: 'job.finished' }>['data'];
const finished = (rseq: number, data: Finished): UploadedEvent => ({ type: 'job.finished', data, rseq, at });

describe('frameMove', () => {
  it('events only: no move', () => {
    expect(frameMove([msg(1), msg(2)], 100)).toBeUndefined();
  });

  it('harness.started: assigned → running, started at now unless an earlier attempt started it, with its session id', () => {
    expect(frameMove([started(1, 's-1'), msg(2)], 100)).toEqual({ from: ['assigned'], to: 'running', startedAtIfUnset: 100, sessionId: 's-1' });
    expect(frameMove([started(1)], 100)).toEqual({ from: ['assigned'], to: 'running', startedAtIfUnset: 100 });
  });

  it('job.finished: its status from assigned, running or cancelling (a success also from paused); reason defaults by status; children collected', () => {
    expect(frameMove([finished(3, { status: 'succeeded', result: { summary: 'ok' } })], 100)).toEqual({
      from: ['assigned', 'running', 'cancelling', 'paused'],
      to: 'succeeded',
      endReason: null,
      error: null,
      result: { summary: 'ok' },
      withChildren: withChildResults,
    });
    // Any other ending leaves a budget-paused job paused, for its top-up (server/paused-exit.ts).
    expect(frameMove([finished(3, { status: 'failed', error: 'boom' })], 100)).toMatchObject({ from: ['assigned', 'running', 'cancelling'], to: 'failed', endReason: 'error', error: 'boom', result: null });
    expect(frameMove([finished(3, { status: 'cancelled' })], 100)).toMatchObject({ from: ['assigned', 'running', 'cancelling'], to: 'cancelled', endReason: 'cancelled' });
    expect(frameMove([finished(3, { status: 'failed', reason: 'turn_limit' })], 100)).toMatchObject({ endReason: 'turn_limit' });
  });

  it('started and finished in one frame: one move to the end status, started_at if unset, the start session id unless the end names one', () => {
    const both = frameMove([started(1, 's-start'), finished(2, { status: 'succeeded' })], 100);
    expect(both).toMatchObject({ to: 'succeeded', startedAtIfUnset: 100, sessionId: 's-start' });
    expect(both).not.toHaveProperty('startedAt');
    expect(frameMove([started(1, 's-start'), finished(2, { status: 'succeeded', sessionId: 's-end' })], 100)).toMatchObject({ sessionId: 's-end' });
    // The first job.finished counts.
    expect(frameMove([finished(1, { status: 'failed' }), finished(2, { status: 'succeeded' })], 100)).toMatchObject({ to: 'failed' });
  });
});

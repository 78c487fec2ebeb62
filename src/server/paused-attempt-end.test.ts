import { describe, expect, it } from 'vitest';
import type { UploadedEvent } from '../protocol/index.js';
import { endsAttemptUnsucceeded, withPausedAttemptEnd } from './paused-attempt-end.js';
import { uploadedEventsProblem } from './frame-checks.js';

const at = '2026-12-06T10:00:00.000Z';
const log: UploadedEvent = { rseq: 7, at, type: 'log', data: { stream: 'stdout', line: 'bye' } };
const finished = (status: 'succeeded' | 'failed' | 'cancelled', extra: Record<string, string> = {}): UploadedEvent => ({ rseq: 8, at, type: 'job.finished', data: { status, ...extra } });

describe('withPausedAttemptEnd', () => {
  it('stores a paused attempt\'s job.finished as attempt.ended, with every field and the same rseq and time', () => {
    const events = [log, finished('cancelled', { reason: 'cancelled', error: 'paused: job tree out of budget', sessionId: 's-1' })];
    expect(withPausedAttemptEnd({ status: 'paused', attempt: 3 }, 3, events)).toEqual([
      log,
      { rseq: 8, at, type: 'attempt.ended', data: { attempt: 3, status: 'cancelled', reason: 'cancelled', error: 'paused: job tree out of budget', sessionId: 's-1' } },
    ]);
    expect(events[1]!.type).toBe('job.finished'); // the frame given is not changed
    expect(withPausedAttemptEnd({ status: 'paused', attempt: 1 }, 1, [finished('failed')])).toEqual([{ rseq: 8, at, type: 'attempt.ended', data: { attempt: 1, status: 'failed' } }]);
  });

  it('leaves a success (it ends the paused job), another attempt, another status and no job alone', () => {
    const ok = [finished('succeeded')];
    expect(withPausedAttemptEnd({ status: 'paused', attempt: 1 }, 1, ok)).toBe(ok);
    const failed = [finished('failed')];
    expect(withPausedAttemptEnd({ status: 'paused', attempt: 2 }, 1, failed)).toBe(failed); // a stale attempt: the store refuses it
    for (const status of ['running', 'cancelling', 'queued', 'cancelled'] as const) expect(withPausedAttemptEnd({ status, attempt: 1 }, 1, failed)).toBe(failed);
    expect(withPausedAttemptEnd(null, 1, failed)).toBe(failed);
  });

  it('endsAttemptUnsucceeded picks the frames it may change', () => {
    expect(endsAttemptUnsucceeded([log, finished('cancelled')])).toBe(true);
    expect(endsAttemptUnsucceeded([finished('failed')])).toBe(true);
    expect(endsAttemptUnsucceeded([log, finished('succeeded')])).toBe(false);
    expect(endsAttemptUnsucceeded([log])).toBe(false);
  });

  it('a runner may not send attempt.ended itself', () => {
    const forged: UploadedEvent = { rseq: 1, at, type: 'attempt.ended', data: { attempt: 1, status: 'cancelled' } };
    expect(uploadedEventsProblem([forged])).toBe("bad frame: events[0] is an attempt.ended event; the server records a paused job's attempt end from its job.finished, a runner may not send one");
  });
});

import { describe, expect, it } from 'vitest';
import { RunnerToServer } from '../protocol/index.js';
import { fastRunnerFrame } from './frame-fast.js';

// The hand check must give exactly zod's output (same keys, same order) for what it accepts,
// and accept nothing zod refuses: the hub uses it instead of zod for those frames.

const at = '2026-12-01T00:00:00.000Z';
const VALID: unknown[] = [
  {
    type: 'job.events',
    jobId: 7,
    attempt: 1,
    events: [
      { rseq: 1, at, type: 'harness.started', data: { harness: 'command', pid: 1 } },
      { rseq: 2, at, type: 'job.finished', data: { status: 'succeeded' } },
    ],
  },
  // keys in another order than the schema's: the output is in the schema's order
  {
    events: [
      { data: { pid: 42, branch: 'b', harness: 'claude-code', sessionId: 's1', workspace: '/w' }, type: 'harness.started', at, rseq: 3 },
      { type: 'job.finished', data: { sessionId: 's', error: 'boom', reason: 'error', status: 'failed' }, rseq: 4, at: 'not a date, any string' },
    ],
    attempt: 2,
    jobId: 9,
    type: 'job.events',
  },
  {
    type: 'job.events',
    jobId: 1,
    attempt: 3,
    events: [
      { rseq: 1, at, type: 'message', data: { role: 'assistant', text: 'hi' } },
      { rseq: 2, at, type: 'log', data: { stream: 'stderr', line: '' } },
      { rseq: 3, at, type: 'progress', data: { message: 'cloning', phase: 'workspace' } },
      { rseq: 4, at, type: 'tool.result', data: { truncated: false, isError: true, output: 'x', name: 'Bash', id: 't1' } },
      { rseq: 5, at, type: 'tool.result', data: { id: 't2', output: '', isError: false } },
      { rseq: 6, at, type: 'job.finished', data: { status: 'cancelled' } },
    ],
  },
  { type: 'heartbeat', running: [] },
  { running: [{ attempt: 2, jobId: 5 }, { jobId: 6, attempt: 1 }], type: 'heartbeat' },
  // the largest id PostgreSQL integer holds
  { type: 'heartbeat', running: [{ jobId: 2 ** 31 - 1, attempt: 2 ** 31 - 1 }] },
];

/** Frames zod refuses (each must go to zod for its message). */
const INVALID: unknown[] = [
  null,
  [],
  'job.events',
  { type: 'job.events', jobId: 0, attempt: 1, events: [{ rseq: 1, at, type: 'log', data: { stream: 'stdout', line: 'x' } }] },
  { type: 'job.events', jobId: 1.5, attempt: 1, events: [{ rseq: 1, at, type: 'log', data: { stream: 'stdout', line: 'x' } }] },
  { type: 'job.events', jobId: 2 ** 53, attempt: 1, events: [{ rseq: 1, at, type: 'log', data: { stream: 'stdout', line: 'x' } }] },
  // Ids above 2^31 - 1 (PostgreSQL integer): refused before the store sees them.
  { type: 'job.events', jobId: 2 ** 31, attempt: 1, events: [{ rseq: 1, at, type: 'log', data: { stream: 'stdout', line: 'x' } }] },
  { type: 'job.events', jobId: 1, attempt: 2 ** 31, events: [{ rseq: 1, at, type: 'log', data: { stream: 'stdout', line: 'x' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 2 ** 31, at, type: 'log', data: { stream: 'stdout', line: 'x' } }] },
  { type: 'heartbeat', running: [{ jobId: 2 ** 31, attempt: 1 }] },
  { type: 'job.events', jobId: 1, attempt: '1', events: [{ rseq: 1, at, type: 'log', data: { stream: 'stdout', line: 'x' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [] },
  { type: 'job.events', jobId: 1, attempt: 1, events: Array.from({ length: 1001 }, (_, i) => ({ rseq: i + 1, at, type: 'log', data: { stream: 'stdout', line: 'x' } })) },
  { type: 'job.events', jobId: 1, attempt: 1, events: {} },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 0, at, type: 'log', data: { stream: 'stdout', line: 'x' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, type: 'log', data: { stream: 'stdout', line: 'x' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at: 5, type: 'log', data: { stream: 'stdout', line: 'x' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'log', data: { stream: 'stdin', line: 'x' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'log' }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'nope', data: {} }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'harness.started', data: { harness: 'c', pid: 1.5 } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'harness.started', data: { harness: 'c' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'harness.started', data: { harness: 'c', pid: 1, sessionId: 3 } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'job.finished', data: { status: 'lost' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'job.finished', data: { status: 'failed', error: null } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'message', data: { role: 'tool', text: 'x' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'tool.result', data: { id: 't', output: 'x' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'tool.result', data: { id: 't', output: 'x', isError: false, truncated: 'no' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'progress', data: { phase: 'p' } }] },
  { type: 'heartbeat' },
  { type: 'heartbeat', running: [{ jobId: 1 }] },
  { type: 'heartbeat', running: [{ jobId: 1, attempt: -1 }] },
  { type: 'heartbeat', running: {} },
  { type: 'hello' },
];

/** Valid for zod, left to zod by the hand check (other frame types, kinds, extra keys zod strips, a result). */
const TO_ZOD: unknown[] = [
  { type: 'hello', name: 'r', labels: {}, capacity: 1, version: 'v', running: [] },
  { type: 'job.accepted', jobId: 1, attempt: 1 },
  { type: 'job.events', jobId: 1, attempt: 1, extra: true, events: [{ rseq: 1, at, type: 'log', data: { stream: 'stdout', line: 'x' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, extra: 1, type: 'log', data: { stream: 'stdout', line: 'x' } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'log', data: { stream: 'stdout', line: 'x', extra: 1 } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'job.finished', data: { status: 'succeeded', result: { summary: 'ok' } } }] },
  { type: 'job.events', jobId: 1, attempt: 1, events: [{ rseq: 1, at, type: 'tool.call', data: { id: 't', name: 'Bash', input: {} } }] },
  { type: 'heartbeat', running: [{ jobId: 1, attempt: 1, extra: 1 }] },
  JSON.parse('{"type":"heartbeat","running":[],"__proto__":{"x":1}}'),
];

describe('fastRunnerFrame', () => {
  it('gives zod’s exact output for the common valid frames', () => {
    for (const raw of VALID) {
      const fast = fastRunnerFrame(raw);
      expect(fast, JSON.stringify(raw)).not.toBeNull();
      const zod = RunnerToServer.parse(raw);
      // same values and the same key order (SQLite stores event data as JSON text)
      expect(JSON.stringify(fast)).toBe(JSON.stringify(zod));
      expect(fast).toStrictEqual(zod);
    }
  });

  it('accepts nothing zod refuses', () => {
    for (const raw of INVALID) {
      expect(RunnerToServer.safeParse(raw).success, JSON.stringify(raw)?.slice(0, 200)).toBe(false);
      expect(fastRunnerFrame(raw), JSON.stringify(raw)?.slice(0, 200)).toBeNull();
    }
  });

  it('leaves other valid frames to zod', () => {
    for (const raw of TO_ZOD) {
      expect(RunnerToServer.safeParse(raw).success, JSON.stringify(raw)).toBe(true);
      expect(fastRunnerFrame(raw), JSON.stringify(raw)).toBeNull();
    }
  });

  it('agrees with zod on mutated frames (accepted → zod accepts with the same output)', () => {
    // Each valid frame with one value somewhere replaced or one key removed or added.
    const weird: unknown[] = [undefined, null, 0, -1, 1.5, 2 ** 31 - 1, 2 ** 31, 2 ** 53, '', 'x', true, [], {}, { a: 1 }, 'succeeded', 'stdout', 'assistant'];
    let accepted = 0;
    let checked = 0;
    const visit = (root: unknown, node: unknown): void => {
      if (typeof node !== 'object' || node === null) return;
      const keys = Object.keys(node);
      for (const k of keys) {
        const orig = (node as Record<string, unknown>)[k];
        for (const w of weird) {
          (node as Record<string, unknown>)[k] = w;
          check(root);
        }
        delete (node as Record<string, unknown>)[k];
        check(root);
        (node as Record<string, unknown>)[k] = orig;
        visit(root, orig);
      }
      if (!Array.isArray(node)) {
        (node as Record<string, unknown>).added = 1;
        check(root);
        delete (node as Record<string, unknown>).added;
      }
    };
    const check = (raw: unknown): void => {
      checked++;
      const copy = JSON.parse(JSON.stringify(raw)) as unknown; // as the hub sees it: JSON
      const fast = fastRunnerFrame(copy);
      const zod = RunnerToServer.safeParse(copy);
      if (fast === null) return;
      accepted++;
      expect(zod.success, JSON.stringify(copy)).toBe(true);
      expect(JSON.stringify(fast)).toBe(JSON.stringify(zod.data));
    };
    for (const v of VALID) {
      const root = JSON.parse(JSON.stringify(v)) as unknown;
      visit(root, root);
    }
    expect(checked).toBeGreaterThan(1000);
    expect(accepted).toBeGreaterThan(50); // some mutations stay valid (e.g. another string)
  });
});

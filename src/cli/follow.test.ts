import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FlotillaClient } from '../client/index.js';
import type { EventBody, Job } from '../protocol/index.js';
import { followJob } from './follow.js';
import type { CliIO } from './io.js';

// followJob against a real HTTP server that streams a job's events with pauses in between.

const STEPS: Array<[number, EventBody]> = [
  [0, { type: 'status', data: { status: 'queued' } }],
  [300, { type: 'progress', data: { phase: 'workspace', message: 'preparing workspace: cloning examples/calc' } }],
  [300, { type: 'harness.started', data: { harness: 'claude-code', pid: 1 } }],
  [0, { type: 'tool.call', data: { id: 't1', name: 'Bash', input: { command: 'npm test' } } }],
  [0, { type: 'tool.result', data: { id: 't1', output: 'ℹ pass 4\nℹ fail 0', isError: false } }],
  [0, { type: 'message', data: { role: 'assistant', text: 'All good.' } }],
  [0, { type: 'job.finished', data: { status: 'succeeded' } }],
];

/** A job paused for budget whose attempt then ends; the stream stays quiet a while, then the job is cancelled. */
const PAUSE_STEPS: Array<[number, EventBody]> = [
  [0, { type: 'status', data: { status: 'running' } }],
  [0, { type: 'status', data: { status: 'paused', message: 'paused: budget exhausted' } }],
  [50, { type: 'status', data: { status: 'paused', message: 'attempt 1 stopped for the pause (its harness was ended); still paused for budget: its workspace and session are kept' } }],
  [700, { type: 'job.finished', data: { status: 'cancelled' } }],
];

function job(status: Job['status']): Job {
  return {
    id: 3, parentId: null, rootId: 3, agent: 'test-fixer', agentVersion: '1', input: {}, status, endReason: null, error: null,
    priority: 0, selector: {}, runnerId: 1, attempt: 1, budgetMicros: 1_000_000, sessionId: null, result: null,
    createdAt: 'x', assignedAt: null, startedAt: null, finishedAt: null,
    usage: { modelCalls: 1, inputTokens: 10, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 5, costMicros: 42, estimatedCalls: 0 },
  };
}

let server: Server;
let url: string;
let downFor5 = 0;

beforeAll(async () => {
  server = createServer(async (req, res) => {
    if (req.url === '/api/jobs/3') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(job('succeeded')));
    }
    if (req.url === '/api/jobs/5') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ ...job('succeeded'), id: 5, rootId: 5 }));
    }
    if (req.url === '/api/jobs/5/events') {
      // the server is down for the first 4 tries (503), then streams the job to its end
      if (++downFor5 <= 4) return res.writeHead(503).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`id: 1\nevent: job\ndata: ${JSON.stringify({ type: 'job.finished', data: { status: 'succeeded' }, seq: 1, jobId: 5, at: 'x' })}\n\n`);
      return res.end('event: end\ndata: {"status":"succeeded"}\n\n');
    }
    if (req.url === '/api/jobs/4') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ ...job('cancelled'), id: 4, rootId: 4 }));
    }
    const events = /^\/api\/jobs\/([34])\/events$/.exec(req.url ?? '');
    if (events) {
      // job 3 runs to success; job 4 pauses for budget, then is cancelled
      const [id, steps, end] = events[1] === '3' ? [3, STEPS, 'succeeded'] : [4, PAUSE_STEPS, 'cancelled'];
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let seq = 0;
      for (const [delay, body] of steps) {
        if (delay) await new Promise((r) => setTimeout(r, delay));
        seq++;
        res.write(`id: ${seq}\nevent: job\ndata: ${JSON.stringify({ ...body, seq, jobId: id, at: 'x' })}\n\n`);
      }
      res.end(`event: end\ndata: {"status":"${end}"}\n\n`);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** An IO that records writes to both streams in one ordered list. */
function orderedIO(tty: boolean) {
  const writes: Array<['out' | 'err', string]> = [];
  const io: CliIO = {
    stdout: { write: (s: string) => writes.push(['out', s]), isTTY: tty },
    stderr: { write: (s: string) => writes.push(['err', s]), isTTY: tty },
    signals: new EventEmitter(),
  };
  return { io, writes };
}

describe('followJob', () => {
  it('on a TTY: a spinner while waiting, cleared before every printed line; lines and table', async () => {
    const { io, writes } = orderedIO(true);
    const r = await followJob(new FlotillaClient({ url, token: 't' }), job('queued'), { json: false, io, spinnerAfterMs: 100 });
    expect(r).toMatchObject({ interrupted: false, job: { status: 'succeeded' } });
    const out = writes.filter(([s]) => s === 'out').map(([, t]) => t).join('');
    expect(out).toBe(
      [
        'test-fixer … waiting for a runner',
        'test-fixer … preparing workspace: cloning examples/calc',
        'test-fixer → Bash {"command":"npm test"}',
        'test-fixer ← Bash 4 passed, 0 failed',
        'test-fixer: All good.',
        '',
        'job  agent       status     model calls  input  output  cache read  cache write  cost',
        '3    test-fixer  succeeded  1            10     20      0           5            $0.000042',
        '',
      ].join('\n'),
    );
    const CLEAR = '\r\u001b[K';
    const spins = writes.filter(([s, t]) => s === 'err' && t.startsWith(CLEAR) && /^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] test-fixer … /.test(t.slice(CLEAR.length))).map(([, t]) => t);
    expect(spins.some((t) => t.includes('waiting for a runner (0s)'))).toBe(true);
    expect(spins.some((t) => t.includes('preparing workspace: cloning examples/calc (0s)'))).toBe(true);
    // Whenever a spinner was drawn, the next stdout write comes only after a clear.
    let drawn = false;
    for (const [s, t] of writes) {
      if (s === 'err') drawn = t !== CLEAR;
      else expect(drawn).toBe(false);
    }
  });

  it('not a TTY, paused: the still line says paused for budget, not the last status message', async () => {
    const { io, writes } = orderedIO(false);
    await followJob(new FlotillaClient({ url, token: 't' }), { ...job('running'), id: 4, rootId: 4 }, { json: false, io, spinnerAfterMs: 50, stillEveryMs: 200 });
    const still = writes.filter(([s, t]) => s === 'err' && t.includes(' still ')).map(([, t]) => t);
    expect(still.length).toBeGreaterThan(0);
    for (const line of still) expect(line).toMatch(/^test-fixer … still paused for budget \(a top-up resumes it\) \(\d+s\)\n$/);
  });

  it('not a TTY, the server unreachable: the still line says so, not "still working" (tester finding: it did for a whole outage)', async () => {
    const { io, writes } = orderedIO(false);
    await followJob(new FlotillaClient({ url, token: 't', reconnectDelayMs: 200 }), { ...job('running'), id: 5, rootId: 5 }, { json: false, io, spinnerAfterMs: 50, stillEveryMs: 200 });
    const still = writes.filter(([s, t]) => s === 'err' && t.includes(' still ')).map(([, t]) => t);
    expect(still.length).toBeGreaterThan(0);
    for (const line of still) expect(line).toMatch(/^test-fixer … still the server cannot be reached \(HTTP 503\); trying again \(\d+s\)\n$/);
  });

  it('not a TTY: no spinner; --json prints events then {"job"}', async () => {
    const { io, writes } = orderedIO(false);
    await followJob(new FlotillaClient({ url, token: 't' }), job('queued'), { json: true, io, spinnerAfterMs: 50 });
    expect(writes.every(([s]) => s === 'out')).toBe(true);
    const lines = writes.map(([, t]) => t);
    expect(lines).toHaveLength(STEPS.length + 1);
    expect(lines.slice(0, -1).map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(JSON.parse(lines.at(-1)!)).toEqual({ job: job('succeeded') });
  });
});

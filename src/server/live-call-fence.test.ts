/**
 * A job ended through another replica has its live model calls here cut within a second
 * (live-call-fence.ts; fresh-tester finding: a job cancelled through replica A while its agent
 * called replica B's gateway had its calls served and charged in full on B after the cancel).
 * The rule on its own, the fence with stand-ins for the gateway and store, and two real replicas
 * on one PostgreSQL database (skipped when it is unreachable outside CI).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobRow } from '../store/types.js';
import { silentLogger } from '../core/log.js';
import { createTestDatabase } from '../store/test-pg.js';
import { readToEnd, readUntil } from '../gateway/test-upstream.js';
import { attemptCallsEnded, liveCallFence } from './live-call-fence.js';
import { runningJob, startTestServer, TEST_GATEWAY, type TestServer } from './test-helpers.js';

const row = (status: JobRow['status'], attempt: number, finishedAt: number | null = null) => ({ status, attempt, finishedAt });

describe('attemptCallsEnded', () => {
  it('ends the calls of a gone job, an older attempt, an ended status and a paused attempt that ended; not a running or just-paused one', () => {
    expect(attemptCallsEnded(null, 1)).toBe(true);
    expect(attemptCallsEnded(row('running', 2), 1)).toBe(true);
    for (const s of ['cancelling', 'cancelled', 'lost', 'succeeded', 'failed', 'queued'] as const) expect(attemptCallsEnded(row(s, 1), 1), s).toBe(true);
    expect(attemptCallsEnded(row('paused', 1, 1_000), 1)).toBe(true);
    // a pause lets the calls in flight finish until its attempt has ended (as in one process)
    expect(attemptCallsEnded(row('paused', 1), 1)).toBe(false);
    expect(attemptCallsEnded(row('running', 1), 1)).toBe(false);
  });
});

describe('liveCallFence', () => {
  it('reads each live job once per check and cuts what ended: a whole job, or only an older attempt beside the current one', async () => {
    const jobs = new Map<number, ReturnType<typeof row>>([
      [1, row('running', 1)],
      [2, row('cancelled', 1)],
      [3, row('running', 2)],
    ]);
    const live = new Map([
      [1, new Set([1])],
      [2, new Set([1])],
      [3, new Set([1, 2])],
    ]);
    const reads: number[] = [];
    const cuts: Array<[number, number | undefined]> = [];
    const fence = liveCallFence({
      store: { getJob: async (id: number) => (reads.push(id), (jobs.get(id) as JobRow | undefined) ?? null) },
      liveJobs: () => live,
      abortJob: (jobId, before) => (cuts.push([jobId, before]), 1),
      log: silentLogger,
      intervalMs: 60_000,
    });
    try {
      expect(await fence.check()).toBe(2);
      expect(reads).toEqual([1, 2, 3]);
      // job 2 whole; job 3's attempt 1 only (attempt 2 runs)
      expect(cuts).toEqual([
        [2, undefined],
        [3, 2],
      ]);
    } finally {
      fence.stop();
    }
  });
});

const pg = await createTestDatabase();

describe.skipIf(pg === null)('two replicas on one PostgreSQL database', () => {
  const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
  let up: Server;
  let a: TestServer;
  let b: TestServer;
  let upstreamClosed = false;
  beforeAll(async () => {
    // a stream that never ends: 10 input tokens, 400 bytes of text every 200 ms
    up = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(sse('message_start', { type: 'message_start', message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } }));
        const delta = sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'y'.repeat(400) } });
        res.write(delta);
        const timer = setInterval(() => res.write(delta), 200);
        res.on('close', () => ((upstreamClosed = true), clearInterval(timer)));
      });
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const gateway = { ...TEST_GATEWAY, provider: 'anthropic' as const, anthropicApiKey: 'sk-up', anthropicBaseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}` };
    a = await startTestServer({ databaseUrl: pg!.url, gateway, dispatchIntervalMs: 200, heartbeatIntervalMs: 200 });
    // same data folder: B reads the admin token A created
    b = await startTestServer({ databaseUrl: pg!.url, dataDir: a.dataDir, gateway, liveCallFenceMs: 200 });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await new Promise<void>((r) => up?.close(() => r()));
    await pg?.drop();
  });

  it("a job cancelled through A: its stream served by B's gateway ends within a second and is charged what was seen", async () => {
    const { job, runner, token } = await runningJob(a, 5, 'sess-fence');
    const res = await fetch(b.url + '/v1/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await readUntil(reader, 'content_block_delta');
    const t0 = Date.now();
    expect((await a.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' })).status).toBe(200);
    await readToEnd(reader, 5_000); // without the fence the stream never ends
    // B's fence reads every 200 ms; a second at most, with room for a loaded machine
    expect(Date.now() - t0).toBeLessThan(1_500);
    await expect.poll(() => upstreamClosed, { timeout: 2_000 }).toBe(true);
    await expect.poll(async () => (await b.store.jobUsage(job.id)).modelCalls, { timeout: 2_000 }).toBe(1);
    const usage = await b.store.jobUsage(job.id);
    // an estimate from what passed: 10 input tokens reported, at least the 400 bytes of text seen (100 tokens)
    expect(usage).toMatchObject({ estimatedCalls: 1, inputTokens: 10 });
    expect(usage.outputTokens).toBeGreaterThanOrEqual(100);
    expect(await b.store.getTreeBudget(job.id, Date.now())).toMatchObject({ reservedMicros: 0, spentMicros: usage.costMicros });
    await runner.close();
  });
});

/**
 * The control plane and the gateway in one process (as `flotilla up` runs them), through the real
 * server, a fake runner and a fake Anthropic upstream:
 * - `POST /api/jobs/:id/cancel` mid-stream aborts the job's live call (server/live-call-aborts.ts
 *   → Gateway.abortJob): the client's stream ends within 1 s, the upstream connection closes, and
 *   the call is in the ledger charged what was seen (estimated, never $0);
 * - a call refused only because of calls in flight gets a retryable 429 and its job keeps
 *   running (no pause, no stop sent to its runner); its retry after they settle is served (M2,
 *   gateway/budget-wait.ts).
 * Prices (TEST_GATEWAY default): input 3, output 15, cache writes 3.75 / 6 USD per MTok.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readToEnd, readUntil } from '../gateway/test-upstream.js';
import { runningJob, startTestServer, TEST_GATEWAY, type TestServer } from './test-helpers.js';

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const DELTA = sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'y'.repeat(400) } });

let up: Server;
let t: TestServer;
const closedAt = new Map<string, number>();
let seenHeld = 0;
let release!: () => void;
const released = new Promise<void>((r) => (release = r));

beforeAll(async () => {
  up = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const what = String((JSON.parse(body) as { messages: Array<{ content: string }> }).messages[0]?.content);
      res.on('close', () => closedAt.set(what, Date.now()));
      if (what === 'held') {
        // answered once released: 10 input, 100 output = 30 + 1,500 = 1,530 µ$
        seenHeld += 1;
        return void released.then(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 100 } }));
        });
      }
      // a slow stream that never ends
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sse('message_start', { type: 'message_start', message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 } } }));
      res.write(sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
      res.write(DELTA);
      const timer = setInterval(() => res.write(DELTA), 300);
      res.on('close', () => clearInterval(timer));
    });
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  t = await startTestServer({ gateway: { ...TEST_GATEWAY, provider: 'anthropic', anthropicApiKey: 'sk-up', anthropicBaseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}`, budgetWaitMs: 300 } });
});
afterAll(async () => {
  release();
  await t.close();
  await new Promise<void>((r) => up.close(() => r()));
});

const callModel = (token: string, content: string, o: { stream?: boolean; maxTokens?: number } = {}) =>
  fetch(t.url + '/v1/messages', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: o.maxTokens ?? 1000, stream: o.stream ?? false, messages: [{ role: 'user', content }] }),
  });


describe('gateway and control plane in one process', () => {
  it('cancelling a job mid-stream ends its live call within 1 s and charges what was seen', async () => {
    const { job, runner: r, token } = await runningJob(t, 5, 'sess-L');
    const res = await callModel(token, 'stream', { stream: true });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await readUntil(reader, 'content_block_delta');
    const t0 = Date.now();
    expect((await t.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' })).status).toBe(200);
    await readToEnd(reader, 3_000); // without the abort the stream never ends
    expect(Date.now() - t0).toBeLessThan(1_000);
    await expect.poll(() => closedAt.get('stream'), { timeout: 1_000, interval: 20 }).toBeDefined();
    await expect.poll(async () => (await t.store.jobUsage(job.id)).modelCalls, { timeout: 1_000, interval: 20 }).toBe(1);
    const usage = await t.store.jobUsage(job.id);
    expect(usage.estimatedCalls).toBe(1);
    expect(usage.outputTokens).toBeGreaterThanOrEqual(100); // the 400 bytes of text seen
    expect(usage.costMicros).toBeGreaterThan(0);
    expect(await t.store.getTreeBudget(job.id, Date.now())).toMatchObject({ reservedMicros: 0, spentMicros: usage.costMicros });
    await r.close();
  });

  it('a call refused only because of calls in flight gets a retryable 429; its job keeps running and its retry is served once they settle', async () => {
    const { job, runner: r, token } = await runningJob(t, 1, 'sess-L');
    // $0.90 of the $1.00 spent; a call's worst case at max_tokens 3000 is ~$0.045 (45,000 µ$ of
    // output + its input): two fit in the $0.10 left, three do not.
    const held = await t.store.reserveBudget(job.id, 900_000, Date.now());
    await t.store.settleBudget(job.id, held!.ok ? held!.reservationId : 0, 900_000, Date.now());
    const inFlight = [callModel(token, 'held', { maxTokens: 3000 }), callModel(token, 'held', { maxTokens: 3000 })];
    await expect.poll(() => seenHeld, { timeout: 10_000 }).toBe(2);
    const third = await callModel(token, 'held', { maxTokens: 3000 });
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('5');
    expect(third.headers.get('x-should-retry')).not.toBe('false');
    expect(((await third.json()) as { error: { type: string } }).error.type).toBe('rate_limit_error');
    expect(seenHeld).toBe(2);
    expect(await t.store.getJob(job.id)).toMatchObject({ status: 'running' });
    release();
    expect((await Promise.all(inFlight)).map((x) => x.status)).toEqual([200, 200]);
    // the harness retries: 100,000 − 2 × 1,530 = 96,940 µ$ left, more than the worst case
    const retry = await callModel(token, 'held', { maxTokens: 3000 });
    expect(retry.status).toBe(200);
    await retry.arrayBuffer();
    expect(await t.store.getJob(job.id)).toMatchObject({ status: 'running' });
    expect(await t.store.getTreeBudget(job.id, Date.now())).toMatchObject({ limitMicros: 1_000_000, spentMicros: 900_000 + 3 * 1_530, reservedMicros: 0 });
    await r.close();
  });
});

/**
 * Stopping the server with model calls in flight (gateway.ts drain): the calls end and are
 * recorded before the store closes. It closed the store under them: each call's ledger row and
 * settle failed ("The database connection is not open"), and the sweeper charged every
 * reservation at its worst case minutes later (a fresh user stopped `flotilla up` with 50 calls
 * in flight). Real server, real SQLite store, a fake runner and a fake Anthropic upstream.
 * Prices (TEST_GATEWAY default): input 3, output 15 USD per MTok: 10 input + 100 output tokens
 * cost 30 + 1,500 = 1,530 µ$.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Job } from '../protocol/index.js';
import { runningJob, startTestServer, TEST_GATEWAY, type FakeRunner, type TestServer } from './test-helpers.js';

let up: Server | null = null;
let seen = 0;
let t: TestServer | null = null;
let storeOpen = false;

/** A fake upstream: `slow` answers after 600 ms (10 in, 100 out), `hang` never answers. */
async function upstream(): Promise<string> {
  seen = 0;
  up = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen += 1;
      const what = String((JSON.parse(body) as { messages: Array<{ content: string }> }).messages[0]?.content);
      if (what === 'hang') return;
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 100 } }));
      }, 600);
    });
  });
  await new Promise<void>((r) => up!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(up.address() as AddressInfo).port}`;
}

afterEach(async () => {
  // the test closed the server; the store is closed here, as `flotilla up` closes it next
  if (t && storeOpen) await t.store.close();
  t = null;
  storeOpen = false;
  up?.closeAllConnections();
  await new Promise<void>((r) => (up ? up.close(() => r()) : r()));
  up = null;
});

/** A running job of a fresh server in front of the fake upstream; its token. */
async function start(gatewayDrainMs: number): Promise<{ job: Job; token: string; runner: FakeRunner }> {
  const base = await upstream();
  t = await startTestServer({ gatewayDrainMs, gateway: { ...TEST_GATEWAY, provider: 'anthropic', anthropicApiKey: 'sk-up', anthropicBaseUrl: base } });
  storeOpen = true;
  return runningJob(t, 10, 'sess-D');
}

const callModel = (token: string, content: string) =>
  fetch(t!.url + '/v1/messages', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 1000, messages: [{ role: 'user', content }] }),
  });

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('stopping the server with model calls in flight', () => {
  it('20 calls the upstream is working on finish, get their replies, and are each recorded at their real cost; nothing stays reserved', async () => {
    const { job, token } = await start(5000);
    const replies = Array.from({ length: 20 }, () => callModel(token, 'slow').then(async (r) => [r.status, ((await r.json()) as { usage?: unknown }).usage]));
    await until(() => seen === 20);
    await t!.server.close();
    expect(await Promise.all(replies)).toEqual(Array.from({ length: 20 }, () => [200, { input_tokens: 10, output_tokens: 100 }]));
    expect(await t!.store.jobUsage(job.id)).toMatchObject({ modelCalls: 20, costMicros: 20 * 1530, estimatedCalls: 0 });
    expect(await t!.store.getTreeBudget(job.rootId, Date.now())).toMatchObject({ spentMicros: 20 * 1530, reservedMicros: 0 });
  });

  it('runners stay connected through the drain, their heartbeats answered, and are closed (1001) once it is done (a restart under load lost remote runners\' jobs: a fresh tester)', async () => {
    const { runner, token } = await start(5000);
    const reply = callModel(token, 'slow').then((r) => r.status);
    await until(() => seen === 1);
    const closing = t!.server.close();
    await new Promise((r) => setTimeout(r, 150));
    // the call is still in the upstream's hands (600 ms): the runner is still connected...
    expect(runner.closed).toBe(false);
    // ...its WebSocket pings answered, and its heartbeat recorded
    const pong = new Promise<void>((resolve) => runner.ws.once('pong', () => resolve()));
    runner.ws.ping();
    await pong;
    const before = Date.now();
    runner.send({ type: 'heartbeat', running: [] });
    await new Promise((r) => setTimeout(r, 100));
    expect((await t!.store.getRunner(runner.runnerId))!.lastHeartbeatAt).toBeGreaterThanOrEqual(before);
    await closing;
    expect(await reply).toBe(200);
    expect([runner.closed, runner.closeCode]).toEqual([true, 1001]);
  });

  it('calls still running after the grace period are aborted and recorded with an estimate (never $0); nothing stays reserved', async () => {
    const { job, token } = await start(300);
    const replies = Array.from({ length: 3 }, () => callModel(token, 'hang').then(async (r) => [r.status, r.headers.get('x-should-retry'), r.headers.get('retry-after'), await r.json()], () => 'dropped'));
    await until(() => seen === 3);
    const t0 = Date.now();
    await t!.server.close();
    // the grace period, then the aborts' settles: well under the 5 s allowed for those
    expect(Date.now() - t0).toBeLessThan(3000);
    // told the server stopped, retryable (another replica, or this one started again, serves it),
    // not "the model provider could not be reached" with x-should-retry false (fresh-user finding)
    const message = 'the Flotilla server is stopping: this call was cut before its reply and charged an estimate of what the provider may bill; try again';
    expect(await Promise.all(replies)).toEqual(Array.from({ length: 3 }, () => [503, 'true', '5', { type: 'error', error: { type: 'api_error', message } }]));
    const usage = await t!.store.jobUsage(job.id);
    expect(usage).toMatchObject({ modelCalls: 3, estimatedCalls: 3 });
    expect(usage.costMicros).toBeGreaterThan(0);
    expect(await t!.store.getTreeBudget(job.rootId, Date.now())).toMatchObject({ spentMicros: usage.costMicros, reservedMicros: 0 });
  });
});

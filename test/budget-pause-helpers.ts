/**
 * Helpers of the budget hold and need tests (budget-resume-hold.test.ts, budget-hold-lapse.test.ts,
 * budget-reprice.test.ts): a test server whose gateway calls a fake Anthropic upstream, a real
 * Messages call through it, a job paused for budget by one, and a tree where a resumed job that
 * cannot start holds its sibling out.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { GatewayConfig } from '../src/gateway/config.js';
import type { BudgetView, Job } from '../src/protocol/index.js';
import { FakeRunner, startTestServer, TEST_GATEWAY, type TestServer } from '../src/server/test-helpers.js';

/**
 * A test server over SQLite (dispatch every 100 ms, liveness sweep every 200 ms, the budget
 * sweep at each) whose gateway sends Anthropic calls to a fake upstream in node:http: each call
 * answered with usage 10 in / 10 out (at the test prices, $3 / $15 per million: 30 + 150 = 180
 * µ$), no retries. `gateway` overrides the gateway's settings.
 * @returns the server, how many calls the upstream has answered, and `close` (server, then upstream).
 */
export async function startBudgetServer(gateway: Partial<GatewayConfig> = {}): Promise<{ t: TestServer; upstreamCalls: () => number; close: () => Promise<void> }> {
  let calls = 0;
  const upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      calls++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 10 } }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const t = await startTestServer({ dispatchIntervalMs: 100, sweepIntervalMs: 200, budgetSweepIntervalMs: 0, gateway: { ...TEST_GATEWAY, provider: 'anthropic', anthropicApiKey: 'sk-test', anthropicBaseUrl: url, retry: { retries: 0 }, ...gateway } });
  return {
    t,
    upstreamCalls: () => calls,
    close: async () => {
      await t.close();
      upstream.close();
    },
  };
}

/** A job id and its job token. */
export type Kid = { id: number; token: string };

/** A call of the job holding `token` with max_tokens 1000: at the test prices ($15 per million output) its worst case is over $0.015. */
export const messagesCall = (t: TestServer, token: string) =>
  fetch(t.url + '/v1/messages', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 1000, messages: [{ role: 'user', content: 'go on' }] }),
  });

/** The attempt end a harness reports when its call was refused for budget (402), in session `sess-<id>-1`. */
export const refused402 = (id: number) => ({ status: 'failed' as const, reason: 'budget', error: 'API Error: 402', sessionId: `sess-${id}-1` });

/**
 * Each job's call is refused (402) and the job paused for budget; its runner `r` reports the
 * attempt ended with `finished` (a harness exiting on the refusal, or the pause's stop), and
 * the server records that end (the job's slot is freed).
 * @throws (rejects) when a call is not refused, a job not paused, or an attempt's end not recorded within ~5 s.
 */
export async function pauseOnBudget(t: TestServer, r: FakeRunner, jobs: Kid[], finished: (id: number) => { status: 'failed' | 'cancelled'; reason: string; error: string; sessionId?: string } = refused402): Promise<void> {
  for (const k of jobs) {
    const res = await messagesCall(t, k.token);
    expect(res.status).toBe(402);
    await res.arrayBuffer();
    expect((await (await t.api(`/api/jobs/${k.id}`)).json()) as Job).toMatchObject({ status: 'paused', endReason: 'budget' });
    await r.events(k.id, 1, { type: 'job.finished', data: finished(k.id) });
    await r.next('job.cancel', (f) => f.jobId === k.id, 10_000);
    for (let i = 0; (await t.store.getJob(k.id))?.finishedAt === null; i++) {
      if (i > 100) throw new Error(`job ${k.id}'s paused attempt never ended`);
      await new Promise((z) => setTimeout(z, 50));
    }
  }
}

/**
 * A $0.10 tree with Y on runner `keepName` and X on runner `goneName` (labels box=one / box=two),
 * $0.095 spent: X refused and paused, `goneName` disconnected, a top-up of X's need less the
 * $0.005 left resumes X (queued, pinned to the runner that is gone: it cannot start), and Y's
 * call, falling in the room X holds, is refused and pauses Y. `resumedAt`: a time just after
 * the resume (ms).
 */
export async function xHoldsYOut(t: TestServer, keepName: string, goneName: string) {
  const view = async (id: number) => (await (await t.api(`/api/jobs/${id}/budget`)).json()) as BudgetView;
  const keep = await FakeRunner.start(t, { name: keepName, labels: { box: 'one' }, capacity: 4 });
  await keep.hello({ name: keepName, labels: { box: 'one' }, capacity: 4 });
  const gone = await FakeRunner.start(t, { name: goneName, labels: { box: 'two' }, capacity: 2 });
  await gone.hello({ name: goneName, labels: { box: 'two' }, capacity: 2 });
  const start = (fr: FakeRunner, id: number) => fr.startJob(id, (attempt) => `sess-${id}-${attempt}`);
  const root = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, labels: { box: 'one' }, budgetUsd: 0.1 } })).json()) as Job;
  const { token } = await start(keep, root.id);
  const kid = async (fr: FakeRunner, box: string): Promise<Kid> => {
    const j = (await (await t.api('/api/jobs', { token, json: { agent: 'test-fixer', input: { repo: 'repos/k' }, labels: { box } } })).json()) as Job;
    return { id: j.id, token: (await start(fr, j.id)).token };
  };
  const y = await kid(keep, 'one');
  const x = await kid(gone, 'two');
  const held = await t.store.reserveBudget(root.id, 95_000, Date.now(), 60_000);
  if (!held?.ok) throw new Error('the $0.095 did not fit');
  await t.store.settleBudget(root.id, held.reservationId, 95_000, Date.now());
  await pauseOnBudget(t, gone, [x]);
  await gone.close();
  const needX = (await view(x.id)).resumeNeeds!.needMicros!;
  const top = (await (await t.api(`/api/jobs/${root.id}/budget`, { json: { addUsd: (needX - 5_000) / 1e6 } })).json()) as BudgetView;
  expect(top.resumed).toEqual([x.id]);
  const resumedAt = Date.now();
  expect((await (await t.api(`/api/jobs/${x.id}`)).json()) as Job).toMatchObject({ status: 'queued' });
  await pauseOnBudget(t, keep, [y]);
  expect((await view(root.id)).budget).toMatchObject({ heldMicros: needX, remainingMicros: 0 });
  return { keep, gone, root, x, y, needX, resumedAt };
}

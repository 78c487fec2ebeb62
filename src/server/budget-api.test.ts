import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetView, CostRollup, Job } from '../protocol/index.js';
import { FakeRunner, startTestServer, waitFor, type TestServer } from './test-helpers.js';

/**
 * Budgets end to end through the real server: a job's model call through the gateway, the
 * tree runs out, the refusal pauses the job (the runner's later `failed`/`budget` report does
 * not change that), a top-up through the API resumes it in its session, and the cost rollups.
 * Prices (TEST_GATEWAY default): input 3, output 15, cache write 3.75, cache read 0.30 USD/MTok.
 */
describe('budgets through the API and the gateway', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());
  const at = () => new Date().toISOString();

  const callModel = (token: string, body: Record<string, unknown> = {}) =>
    fetch(t.url + '/v1/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 1000, messages: [{ role: 'user', content: 'fix it' }], ...body }),
    });

  it('two top-ups at once: each reply says what it added and the limit its own update left (the view is read later)', async () => {
    const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 1 } })).json()) as Job;
    const replies = await Promise.all([0.5, 0.5, 0.25].map(async (addUsd) => (await t.api(`/api/jobs/${job.id}/budget`, { json: { addUsd } })).json() as Promise<BudgetView>));
    // whatever order they ran in, their own limits are three distinct steps from $1 to $2.25
    expect(replies.map((v) => v.topUp!.addedMicros)).toEqual([500_000, 500_000, 250_000]);
    const limits = replies.map((v) => v.topUp!.limitMicros);
    expect(new Set(limits).size).toBe(3);
    expect(Math.max(...limits)).toBe(2_250_000);
    for (const v of replies) expect(v.budget.limitMicros).toBeGreaterThanOrEqual(v.topUp!.limitMicros);
    expect(((await (await t.api(`/api/jobs/${job.id}/budget`)).json()) as BudgetView).topUp).toBeUndefined(); // GET: no top-up
    await t.api(`/api/jobs/${job.id}/cancel`, { method: 'POST' });
  });

  it('refuses once the tree is spent, pauses the job, and a top-up resumes it in the same session', async () => {
    const created = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 0.05 } });
    const job = (await created.json()) as Job;
    const r = await FakeRunner.start(t);
    await r.hello();
    const assign = await r.next('job.assign', (f) => f.assignment.jobId === job.id);
    const token = assign.assignment.token;
    r.send({ type: 'job.accepted', jobId: job.id, attempt: 1 });
    r.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 1, at: at(), type: 'harness.started', data: { harness: 'claude-code', pid: 1, sessionId: 'sess-A' } }] });
    await r.next('ack');

    // Turn 0 of test-fixer's script: 4 input, 62 output, 14,512 cache write
    // = 12 + 930 + 54,420 = 55,362 µ$: the worst case (~15,100 µ$) fitted $0.05, the real cost overshoots it.
    const first = await callModel(token);
    expect(first.status).toBe(200);
    await first.json();
    const budget1 = (await (await t.api(`/api/jobs/${job.id}/budget`)).json()) as BudgetView;
    expect(budget1.budget).toEqual({ rootId: job.id, limitMicros: 50_000, spentMicros: 55_362, reservedMicros: 0, remainingMicros: 0 });

    const refused = await callModel(token);
    expect(refused.status).toBe(402);
    expect(refused.headers.get('x-should-retry')).toBe('false');
    const err = (await refused.json()) as { type: string; error: { type: string; message: string } };
    expect(err.type).toBe('error');
    expect(err.error.type).toBe('billing_error');
    expect(err.error.message).toMatch(new RegExp(`job tree ${job.id} .*budget of \\$0\\.050000, \\$0\\.055362 spent .*\\$0\\.000000 left`));
    expect(err.error.message).toContain(`flotilla budget ${job.id} --add`);

    let row = (await (await t.api(`/api/jobs/${job.id}`)).json()) as Job;
    expect(row).toMatchObject({ status: 'paused', endReason: 'budget' });
    // The token no longer authenticates a live job, but the paused job's harness keeps getting
    // the budget refusal (not a 401, which reads as a bad key), and nothing is served.
    const whilePaused = await callModel(token);
    expect([whilePaused.status, whilePaused.headers.get('x-should-retry')]).toEqual([402, 'false']);
    expect(((await whilePaused.json()) as { error: { type: string } }).error.type).toBe('billing_error');
    // The harness exits on the 402 and the runner reports failed/budget: the job stays paused.
    r.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 2, at: at(), type: 'job.finished', data: { status: 'failed', reason: 'budget', error: 'API Error: 402', sessionId: 'sess-A' } }] });
    await r.next('ack');
    row = (await (await t.api(`/api/jobs/${job.id}`)).json()) as Job;
    expect(row).toMatchObject({ status: 'paused', endReason: 'budget' });

    // Bad top-ups name the field; nothing changes.
    const bad = await t.api(`/api/jobs/${job.id}/budget`, { json: { addUsd: -2 } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { field: string } }).error.field).toBe('addUsd');
    expect((await t.api('/api/jobs/999999/budget', { json: { addUsd: 1 } })).status).toBe(404);
    // below one micro-dollar (it rounded to 0 µ$ and the store refused it: a 500)
    for (const addUsd of [0.0000004, 1e-300]) {
      const tiny = await t.api(`/api/jobs/${job.id}/budget`, { json: { addUsd } });
      expect([tiny.status, await tiny.json()]).toEqual([400, { error: { code: 'invalid_request', message: 'addUsd: must be at least 0.000001 (one micro-dollar)', field: 'addUsd' } }]);
    }
    // finer than a micro-dollar (it was rounded without a word: 0.0000015 → 2 µ$)
    for (const addUsd of [0.0000015, 1.1234567]) {
      const fine = await t.api(`/api/jobs/${job.id}/budget`, { json: { addUsd } });
      expect([fine.status, await fine.json()]).toEqual([400, { error: { code: 'invalid_request', message: 'addUsd: must have at most 6 decimals (the smallest step is 0.000001, one micro-dollar)', field: 'addUsd' } }]);
    }
    // a field given twice: refused naming it, never read as the last (fresh-user finding: $2 added)
    const twice = await t.api(`/api/jobs/${job.id}/budget`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"addUsd":1, "addUsd":2}' });
    expect([twice.status, await twice.json()]).toEqual([400, { error: { code: 'invalid_request', message: 'addUsd: given twice in the request body; give each field once', field: 'addUsd' } }]);

    // the refused call's worst case, as the resume rule reads it: what the resumed job holds
    const need = ((await (await t.api(`/api/jobs/${job.id}/budget`)).json()) as BudgetView).resumeNeeds!.needMicros!;
    expect(need).toBeGreaterThan(0);
    const top = await t.api(`/api/jobs/${job.id}/budget`, { json: { addUsd: 2 } });
    expect(top.status).toBe(200);
    const view = (await top.json()) as BudgetView;
    // resumed: the room of its refused call is held for it until that call is made (store/budget-holds.ts);
    // its own view counts that room as its own (left for it, `ownHeldMicros`), and names it among the holders
    // resumed: queued, or assigned already; still queued, its hold lapses 15 min (the default budgetHoldMs) after its resume
    const resumedAt = (await t.store.getJob(job.id))!.resumedAt!;
    const holder = view.holders?.[0]?.status === 'queued' ? { jobId: job.id, status: 'queued', heldMicros: need, lapsesAt: new Date(resumedAt + 15 * 60_000).toISOString() } : { jobId: job.id, status: 'assigned', heldMicros: need };
    expect(view).toEqual({ jobId: job.id, budget: { rootId: job.id, limitMicros: 2_050_000, spentMicros: 55_362, reservedMicros: 0, remainingMicros: 1_994_638 }, resumed: [job.id], pausedJobs: [], jobStatus: expect.stringMatching(/^(queued|assigned)$/), topUp: { addedMicros: 2_000_000, limitMicros: 2_050_000 }, holders: [holder], ownHeldMicros: need });
    // A new attempt, resuming the session; the job shows the new limit.
    const again = await r.next('job.assign', (f) => f.assignment.jobId === job.id);
    expect(again.assignment).toMatchObject({ attempt: 2, resumeSessionId: 'sess-A' });
    row = (await (await t.api(`/api/jobs/${job.id}`)).json()) as Job;
    expect(row).toMatchObject({ status: 'assigned', attempt: 2, budgetMicros: 2_050_000, endReason: null });
    const next = await callModel(again.assignment.token, { messages: [{ role: 'user', content: 'go on' }, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'more' }] });
    expect(next.status).toBe(200);
    await next.json();
    // its call made and recorded, the hold ends (the server's hook runs after the reply)
    const after = await waitFor(
      async () => ((await (await t.api(`/api/jobs/${job.id}/budget`)).json()) as BudgetView).budget,
      (b) => b.heldMicros === undefined,
    );
    expect(after).toEqual({ rootId: job.id, limitMicros: 2_050_000, spentMicros: 55_362 + 7_072, reservedMicros: 0, remainingMicros: 2_050_000 - 55_362 - 7_072 });

    // Rollups: 4 calls for the agent (two refused at $0: the pausing one, the one while paused); turn 1 = 6×3 + 71×15 + 14,512×0.30 + 436×3.75 = 18 + 1,065 + 4,353.6 + 1,635 = 7,071.6 → 7,072 µ$.
    const costs = (await (await t.api('/api/costs?by=agent&since=1d')).json()) as CostRollup;
    expect(costs.rows).toEqual([
      { key: 'test-fixer', calls: 4, refusedCalls: 2, estimatedCalls: 0, inputTokens: 10, outputTokens: 133, cacheReadTokens: 14_512, cacheWriteTokens: 14_948, costMicros: 55_362 + 7_072, costNanos: 55_362_000 + 7_071_600 },
    ]);
    const byRunner = (await (await t.api('/api/costs?by=runner')).json()) as CostRollup;
    expect(byRunner.rows.map((x) => [x.key, x.costMicros])).toEqual([[String(r.runnerId), 62_434]]);
    const badBy = await t.api('/api/costs?by=planet');
    expect(badBy.status).toBe(400);
    expect(((await badBy.json()) as { error: { field: string } }).error.field).toBe('by');
    expect((await t.api('/api/costs?since=yesterday')).status).toBe(400);
    expect((await t.api('/api/costs?since=0d')).status).toBe(400); // a window of nothing
    // a day its month does not have is refused, not rolled into the next month (fresh-user finding)
    for (const day of ['2026-02-30', '2026-02-29', '2026-04-31', '2026-13-01', '2026-00-10', '2026-01-00']) expect((await t.api(`/api/costs?since=${day}`)).status, day).toBe(400);
    for (const [day, iso] of [['2028-02-29', '2028-02-29T00:00:00.000Z'], ['2026-04-30T12:00:00Z', '2026-04-30T12:00:00.000Z']]) {
      expect(((await (await t.api(`/api/costs?since=${day}`)).json()) as CostRollup).since, day).toBe(iso);
    }
    await r.close();
  });
});

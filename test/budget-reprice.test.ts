/**
 * A budget pause's need follows the prices (server/budget-reprice.ts): the tester's case — a
 * job paused for budget, then its model's price set 100× by mistake and put back; the need to
 * resume it followed neither (it asked $1.80 where $0.018 fitted, and a top-up of the advised
 * amount at the raised price resumed it only to pause it again). Now each sweep prices the
 * stored need again from what it was worked out from (model, tokens), and the resume rule reads
 * that. Real server over SQLite, real HTTP, a fake runner, a fake Anthropic upstream in node:http.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetView, Job } from '../src/protocol/index.js';
import { FakeRunner, waitFor, type TestServer } from '../src/server/test-helpers.js';
import { startBudgetServer } from './budget-pause-helpers.js';

describe('a paused job\'s need follows price changes', () => {
  let t: TestServer;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ t, close } = await startBudgetServer());
  });
  afterAll(async () => {
    await close();
  });

  it('a price raised, then put back: the need is priced again each time, and a top-up of the need at today\'s prices resumes it', async () => {
    const r = await FakeRunner.start(t, { name: 'reprice-runner', capacity: 2 });
    await r.hello({ name: 'reprice-runner', capacity: 2 });
    const root = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 0.1 } })).json()) as Job;
    const { token } = await r.startJob(root.id, (a) => `sess-${a}`);
    const spent = await t.store.reserveBudget(root.id, 95_000, Date.now(), 60_000);
    if (!spent?.ok) throw new Error('the $0.095 did not fit');
    await t.store.settleBudget(root.id, spent.reservationId, 95_000, Date.now());
    const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 1000, messages: [{ role: 'user', content: 'go on' }] });
    const res = await fetch(t.url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' }, body });
    expect(res.status).toBe(402);
    await res.arrayBuffer();
    // the need: input ⌈(bytes + 8,192) / 3⌉ tokens at the highest input-side rate (1-hour cache
    // write, $6 per million), 1,000 output tokens at $15 per million
    const inTokens = Math.ceil((Buffer.byteLength(body) + 8192) / 3);
    const need = (rates: { in: number; out: number }) => inTokens * rates.in + 1000 * rates.out;
    const needOf = async () => ((await (await t.api(`/api/jobs/${root.id}/budget`)).json()) as BudgetView).resumeNeeds?.needMicros;
    await waitFor(() => t.store.getJob(root.id), (j) => j?.status === 'paused');
    expect(await needOf()).toBe(need({ in: 6, out: 15 }));

    // 100× by mistake: the need follows
    const put = await t.api('/api/gateway/prices', { method: 'PUT', json: { model: 'claude-sonnet-4-5', price: { input: 300, output: 1500, cacheWrite5m: 375, cacheWrite1h: 600, cacheRead: 30, longContext: null } } });
    expect(put.status).toBe(200);
    expect(await waitFor(needOf, (n) => n === need({ in: 600, out: 1500 }))).toBe(need({ in: 600, out: 1500 }));
    // put back: the need at the table's rates again
    expect((await t.api('/api/gateway/prices?model=claude-sonnet-4-5', { method: 'DELETE' })).status).toBe(204);
    expect(await waitFor(needOf, (n) => n === need({ in: 6, out: 15 }))).toBe(need({ in: 6, out: 15 }));
    // a top-up 1 µ$ short of it resumes nothing; one of exactly it resumes the job
    const short = (await (await t.api(`/api/jobs/${root.id}/budget`, { json: { addUsd: (need({ in: 6, out: 15 }) - 5_000 - 1) / 1e6 } })).json()) as BudgetView;
    expect(short.resumed).toEqual([]);
    const enough = (await (await t.api(`/api/jobs/${root.id}/budget`, { json: { addUsd: 0.000001 } })).json()) as BudgetView;
    expect(enough.resumed).toEqual([root.id]);
    await r.close();
  }, 60_000);
});

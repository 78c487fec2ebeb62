/**
 * A price override set through the API carries the model's maximum output (`maxOutput`) and
 * long-context rates (`longContext`) as data/prices.json does: `PUT /api/gateway/prices` takes
 * them (validated as the table is: 400 naming the field), stores them, lists them, and the
 * gateway charges calls by them. `maxOutput` left out keeps the table's; `longContext` left out
 * for a model whose table entry has long-context rates (claude-sonnet-4-5: above 200,000
 * input-side tokens) is refused, 400 naming `price.longContext`, unless it says `null` (flat);
 * an override stored before the API took `longContext` keeps the table's rates. The real
 * server with the shipped price table, a fake runner and a fake Anthropic upstream.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPriceTable } from '../gateway/prices.js';
import type { Job, ModelRoutesView } from '../protocol/index.js';
import { FakeRunner, startTestServer, TEST_GATEWAY, type TestServer } from './test-helpers.js';

let up: Server;
let t: TestServer;
let runner: FakeRunner;
let jobId = 0;
let token = '';
/** What the fake upstream reports for the next call (Anthropic usage). */
let usage: Record<string, number> = {};

beforeAll(async () => {
  up = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: 'end_turn', usage }));
    });
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  // the shipped table: claude-sonnet-4-5 has maxOutput 64,000 and long-context rates above 200,000 input-side tokens
  t = await startTestServer({ gateway: { ...TEST_GATEWAY, prices: loadPriceTable(), provider: 'anthropic', anthropicApiKey: 'sk-up-long-context', anthropicBaseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}` } });
  const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 50 } })).json()) as Job;
  jobId = job.id;
  runner = await FakeRunner.start(t);
  await runner.hello();
  const assign = await runner.next('job.assign', (f) => f.assignment.jobId === job.id);
  token = assign.assignment.token;
  runner.send({ type: 'job.accepted', jobId: job.id, attempt: 1 });
  runner.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 1, at: new Date().toISOString(), type: 'harness.started', data: { harness: 'claude-code', pid: 1, sessionId: 'sess-LC' } }] });
  await runner.next('ack');
});
afterAll(async () => {
  await runner.close();
  await t.close();
  await new Promise<void>((r) => up.close(() => r()));
});

const BASE = { input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 };
const LONG = { aboveInputTokens: 100_000, input: 4, output: 16, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.4 };

const putPrice = (model: string, price: object) => t.api('/api/gateway/prices', { method: 'PUT', json: { model, price } });
const errorOf = async (r: Response) => ((await r.json()) as { error: { field?: string; message: string } }).error;
const listed = async () => ((await (await t.api('/api/gateway/routes')).json()) as ModelRoutesView).prices;

/**
 * One claude-sonnet-4-5 call whose body has `bodyBytes` of text (the input the gateway lets the
 * upstream report is bounded by the body's size) and whose upstream reports `reported`; returns
 * what the job was charged for it, µ$, and whether it was charged as an estimate.
 */
async function call(reported: Record<string, number>, opts: { maxTokens?: number; bodyBytes?: number } = {}): Promise<{ micros: number; estimated: boolean }> {
  const before = await t.store.jobUsage(jobId);
  usage = reported;
  const res = await fetch(t.url + '/v1/messages', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: opts.maxTokens ?? 100, messages: [{ role: 'user', content: 'x'.repeat(opts.bodyBytes ?? 10) }] }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  await res.arrayBuffer();
  await expect.poll(async () => (await t.store.jobUsage(jobId)).modelCalls, { timeout: 2_000, interval: 20 }).toBe(before.modelCalls + 1);
  const after = await t.store.jobUsage(jobId);
  return { micros: after.costMicros - before.costMicros, estimated: after.estimatedCalls > before.estimatedCalls };
}

describe('price overrides through the API: maxOutput and longContext', () => {
  it('an override that leaves out the table\'s long-context rates is refused naming price.longContext; bad values name their field; nothing is stored', async () => {
    const dropped = await putPrice('claude-sonnet-4-5', BASE);
    expect(dropped.status).toBe(400);
    const e = await errorOf(dropped);
    expect(e.field).toBe('price.longContext');
    expect(e.message).toMatch(/above 200000 input-side tokens/);
    expect(e.message).toMatch(/longContext: null/);
    // a dated name is the same table entry
    expect(((await errorOf(await putPrice('claude-sonnet-4-5-20250929', { ...BASE, maxOutput: 1000 }))).field)).toBe('price.longContext');

    for (const [price, field] of [
      [{ ...BASE, longContext: null, maxOutput: 0 }, 'price.maxOutput'],
      [{ ...BASE, longContext: null, maxOutput: 1.5 }, 'price.maxOutput'],
      [{ ...BASE, longContext: null, maxOutput: 1_000_001 }, 'price.maxOutput'],
      [{ ...BASE, longContext: { aboveInputTokens: 100_000, input: 4 } }, 'price.longContext.output'],
      [{ ...BASE, longContext: { ...LONG, aboveInputTokens: 0 } }, 'price.longContext.aboveInputTokens'],
      [{ ...BASE, longContext: { ...LONG, cacheRead: -1 } }, 'price.longContext.cacheRead'],
      [{ ...BASE, longContext: { ...LONG, webSearch: 10 } }, 'price.longContext.webSearch'], // the unknown key itself
    ] as const) {
      const r = await putPrice('claude-sonnet-4-5', price);
      expect([r.status, (await errorOf(r)).field], JSON.stringify(price)).toEqual([400, field]);
    }
    expect(await listed()).toEqual([]);

    // A model whose table entry has no long-context rates (here: the default entry) may leave it out.
    const plain = await putPrice('my-model', BASE);
    expect(plain.status, await plain.clone().text()).toBe(200);
    expect(((await plain.json()) as { price: object }).price).toEqual(BASE);
    expect((await t.api('/api/gateway/prices?model=my-model', { method: 'DELETE' })).status).toBe(204);
  });

  it('its own long-context rates and maximum output: stored, listed, and a call is charged by them', async () => {
    const price = { ...BASE, maxOutput: 2000, longContext: LONG };
    const put = await putPrice('claude-sonnet-4-5', price);
    expect(put.status, await put.clone().text()).toBe(200);
    expect(await put.json()).toMatchObject({ model: 'claude-sonnet-4-5', price });
    expect(await listed()).toEqual([{ model: 'claude-sonnet-4-5', price, updatedAt: expect.any(String) }]);

    // input side 50,000 + 60,000 cache read = 110,000 > 100,000: every token at the long rates:
    // 50,000 × $4 + 60,000 × $0.40 + 10 output × $16 per million = 200,000 + 24,000 + 160 µ$
    expect(await call({ input_tokens: 50_000, cache_read_input_tokens: 60_000, output_tokens: 10 }, { bodyBytes: 120_000 })).toEqual({ micros: 224_160, estimated: false });
    // exactly 100,000 is not above it: base rates, 100,000 × $2 + 10 × $8 = 200,000 + 80 µ$
    expect(await call({ input_tokens: 100_000, output_tokens: 10 }, { bodyBytes: 120_000 })).toEqual({ micros: 200_080, estimated: false });
    // output past the override's maxOutput (request allows 5,000, reply says 3,000) is charged at
    // 2,000, as an estimate: 100 × $2 + 2,000 × $8 = 200 + 16,000 µ$
    expect(await call({ input_tokens: 100, output_tokens: 3000 }, { maxTokens: 5000 })).toEqual({ micros: 16_200, estimated: true });
  });

  it('longContext: null prices every call flat; without maxOutput the table\'s 64,000 still applies', async () => {
    const put = await putPrice('claude-sonnet-4-5', { ...BASE, longContext: null });
    expect(put.status, await put.clone().text()).toBe(200);
    const [row] = await listed();
    expect(row?.price).toEqual({ ...BASE, longContext: null }); // stored as said: null, no maxOutput

    // 250,000 input tokens (above the table's 200,000) at the override's base rate: 250,000 × $2 + 10 × $8
    expect(await call({ input_tokens: 250_000, output_tokens: 10 }, { bodyBytes: 260_000 })).toEqual({ micros: 500_080, estimated: false });
    // max_tokens 100,000, reply says 70,000 output: charged the table's 64,000, as an estimate: 100 × $2 + 64,000 × $8
    expect(await call({ input_tokens: 100, output_tokens: 70_000 }, { maxTokens: 100_000 })).toEqual({ micros: 512_200, estimated: true });
  });

  it('an override stored before the API took longContext (no key) keeps the table\'s long-context rates', async () => {
    await t.store.setModelPrice('claude-sonnet-4-5', BASE, Date.now());
    // any change through this server's API makes its gateway read the stored overrides again
    expect((await putPrice('other-model', BASE)).status).toBe(200);
    expect((await t.api('/api/gateway/prices?model=other-model', { method: 'DELETE' })).status).toBe(204);
    expect((await listed()).find((p) => p.model === 'claude-sonnet-4-5')?.price).toEqual(BASE);

    // 250,000 input-side tokens > 200,000: the table's long-context rates, 250,000 × $6 + 10 × $22.50 per million
    expect(await call({ input_tokens: 250_000, output_tokens: 10 }, { bodyBytes: 260_000 })).toEqual({ micros: 1_500_225, estimated: false });
  });
});

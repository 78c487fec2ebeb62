/**
 * A price override set through the API can set `webSearch` (USD per 1,000 server-side web
 * searches) as data/prices.json does (issue 3): `PUT /api/gateway/prices` takes it, stores it,
 * lists it, and the gateway charges a call's searches at it. A bad value is a 400 naming
 * `price.webSearch`. The real server, a fake runner and a fake Anthropic upstream.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runningJob, startTestServer, TEST_GATEWAY, type TestServer } from './test-helpers.js';

let up: Server;
let t: TestServer;

beforeAll(async () => {
  // 100 input and 10 output tokens, 2 web searches
  up = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: 'end_turn', usage: { input_tokens: 100, output_tokens: 10, server_tool_use: { web_search_requests: 2 } } }));
    });
  });
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  t = await startTestServer({ gateway: { ...TEST_GATEWAY, provider: 'anthropic', anthropicApiKey: 'sk-up-override', anthropicBaseUrl: `http://127.0.0.1:${(up.address() as AddressInfo).port}` } });
});
afterAll(async () => {
  await t.close();
  await new Promise<void>((r) => up.close(() => r()));
});

const PRICE = { input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2, webSearch: 30 };

describe('price overrides through the API: webSearch', () => {
  it('PUT takes webSearch and GET lists it; a negative one is a 400 naming the field', async () => {
    const put = await t.api('/api/gateway/prices', { method: 'PUT', json: { model: 'claude-sonnet-4-5', price: PRICE } });
    expect(put.status, await put.clone().text()).toBe(200);
    expect(await put.json()).toMatchObject({ model: 'claude-sonnet-4-5', price: PRICE });
    const view = (await (await t.api('/api/gateway/routes')).json()) as { prices: Array<{ model: string; price: object }> };
    expect(view.prices).toEqual([expect.objectContaining({ model: 'claude-sonnet-4-5', price: PRICE })]);
    const bad = await t.api('/api/gateway/prices', { method: 'PUT', json: { model: 'claude-sonnet-4-5', price: { ...PRICE, webSearch: -1 } } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { field: string } }).error.field).toBe('price.webSearch');
  });

  it('the gateway charges the searches at the override\'s webSearch', async () => {
    const { job, runner: r, token } = await runningJob(t, 5, 'sess-P');
    const res = await fetch(t.url + '/v1/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': token, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }], messages: [{ role: 'user', content: 'search' }] }),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    await expect.poll(async () => (await t.store.jobUsage(job.id)).modelCalls, { timeout: 2_000, interval: 20 }).toBe(1);
    // 100 input × $2/MTok = 200 µ$; 10 output × $8/MTok = 80 µ$; 2 searches × $30 / 1,000 = 60,000 µ$
    expect(await t.store.jobUsage(job.id)).toMatchObject({ modelCalls: 1, estimatedCalls: 0, costMicros: 60_280 });
    await r.close();
  });
});

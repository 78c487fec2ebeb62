/**
 * H4: server-side web search is charged per request on top of the tokens, and reserved for.
 * Prices (USD per MTok = µ$ per token; webSearch USD per 1,000 requests): claude-x 3 / 15 /
 * 3.75 / 6 / 0.3 and $10 per 1,000 searches (= 10,000 µ$ each, Anthropic's list price);
 * gpt-x 2 / 10 / 2 / 2 / 1 and $10 per 1,000; claude-nosearch (an override written without a
 * search price) 1 µ$ a token → the default entry's $25 per 1,000 (25,000 µ$). Every expected
 * cost below is worked out by hand from these.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../store/open.js';
import { loadPriceTable, priceFor, type PriceTable } from './prices.js';
import { DEFAULT_WEB_SEARCH_USES, webSearchBound } from './server-tools.js';
import { price, sse, SSE_HEADERS } from './test-metering.js';
import { forFile, startGateway } from './test-server.js';
import type { FakeReply } from './test-upstream.js';

const PRICES: PriceTable = {
  version: 't',
  models: {
    'claude-x': { ...price(3, 15, 3.75, 6, 0.3), webSearch: 10 },
    'gpt-x': { ...price(2, 10, 2, 2, 1), webSearch: 10 },
    'claude-nosearch': price(1, 1, 1, 1, 1),
  },
  default: { ...price(1000, 1000, 1000, 1000, 1000), webSearch: 25 },
};
const SEARCH = (maxUses?: number) => ({ type: 'web_search_20250305', name: 'web_search', ...(maxUses !== undefined ? { max_uses: maxUses } : {}) });
const FETCH = { type: 'web_fetch_20250910', name: 'web_fetch', max_uses: 5 };
const messages = (o: { model?: string; tools?: object[]; stream?: boolean; maxTokens?: number } = {}) =>
  JSON.stringify({ model: o.model ?? 'claude-x', max_tokens: o.maxTokens ?? 1000, stream: o.stream ?? false, tools: o.tools ?? [SEARCH(5)], messages: [{ role: 'user', content: 'search it' }] });
const message = (usage: object, content: object[] = [{ type: 'text', text: 'ok' }]) => JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-x', content, stop_reason: 'end_turn', usage });
const searchBlock = (i: number) => ({ type: 'server_tool_use', id: `srvtoolu_${i}`, name: 'web_search', input: { query: 'q' } });

const gw = forFile(() => startGateway({ job: { token: 'flj_server_tools_0123456789abcdefghij', id: 9, budgetMicros: 10_000_000 }, openai: 'openai-compatible', config: { prices: PRICES, budgetWaitMs: 0 } }));

/** Sends one call with a fresh $10 budget; returns its status, the ledger row and what the tree was charged (µ$). */
async function call(path: string, body: string, r: FakeReply, limit = 10_000_000) {
  gw.setReply(r);
  gw.store.budgets.set(9, { limit, spent: 0, reserved: 0 });
  const before = gw.store.calls.length;
  const res = await gw.post(path, body);
  const text = await res.text();
  const b = gw.store.budgets.get(9)!;
  expect(b.reserved).toBe(0);
  return { status: res.status, text, row: gw.store.calls[before]!, rows: gw.store.calls.length - before, spent: b.spent };
}

describe('web search charges (H4)', () => {
  it('Anthropic, not streamed: server_tool_use.web_search_requests are charged $10 per 1,000 on top of the tokens; web fetch is not', async () => {
    const r = await call('/v1/messages', messages({ tools: [SEARCH(5), FETCH] }), { body: message({ input_tokens: 100, output_tokens: 50, server_tool_use: { web_search_requests: 3, web_fetch_requests: 2 } }) });
    expect(r.status).toBe(200);
    // 100 × 3 + 50 × 15 + 3 × 10,000 = 300 + 750 + 30,000
    expect(r.spent).toBe(31_050);
    expect(r.row).toMatchObject({ costMicros: 31_050, webSearchRequests: 3, usageKnown: true });
  });

  it('Anthropic, streamed: the cumulative count of the final message_delta is charged', async () => {
    const body = [
      sse('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-x', content: [], usage: { input_tokens: 100, output_tokens: 1 } } }),
      sse('content_block_start', { index: 0, content_block: searchBlock(1) }),
      sse('content_block_stop', { index: 0 }),
      sse('content_block_start', { index: 1, content_block: searchBlock(2) }),
      sse('content_block_stop', { index: 1 }),
      sse('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 50, server_tool_use: { web_search_requests: 2 } } }),
      sse('message_stop', {}),
    ];
    const r = await call('/v1/messages', messages({ stream: true }), { headers: SSE_HEADERS, body });
    // 300 + 750 + 2 × 10,000
    expect(r.spent).toBe(21_050);
    expect(r.row).toMatchObject({ costMicros: 21_050, webSearchRequests: 2, usageKnown: true });
  });

  it('Anthropic, a stream that breaks before its usage: the searches its blocks started are charged in the estimate', async () => {
    const body = [
      sse('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-x', content: [], usage: { input_tokens: 100, output_tokens: 1 } } }),
      sse('content_block_start', { index: 0, content_block: searchBlock(1) }),
      sse('content_block_start', { index: 1, content_block: searchBlock(2) }),
    ];
    const r = await call('/v1/messages', messages({ stream: true }), { headers: SSE_HEADERS, body });
    expect(r.row).toMatchObject({ webSearchRequests: 2, usageKnown: false });
    expect(r.spent).toBeGreaterThanOrEqual(20_000 + 300);
  });

  it('a reported count past the request\'s max_uses is charged at max_uses, as an estimate', async () => {
    const r = await call('/v1/messages', messages({ tools: [SEARCH(2)] }), { body: message({ input_tokens: 100, output_tokens: 50, server_tool_use: { web_search_requests: 5 } }) });
    // 300 + 750 + 2 × 10,000
    expect(r.row).toMatchObject({ costMicros: 21_050, webSearchRequests: 2, usageKnown: false });
  });

  it('a request that enables no web search is charged none, whatever the upstream reports (Anthropic and Responses): the tokens only, as an estimate', async () => {
    // fresh-tester finding: 1,000 searches reported on a tool-less call were charged $10 on a $0.01 tree
    const anthropic = await call('/v1/messages', messages({ tools: [] }), { body: message({ input_tokens: 100, output_tokens: 10, server_tool_use: { web_search_requests: 1000 } }) });
    // 100 × 3 + 10 × 15, no search
    expect(anthropic.row).toMatchObject({ costMicros: 450, webSearchRequests: 0, usageKnown: false });
    expect(anthropic.spent).toBe(450);
    const few = await call('/v1/messages', messages({ tools: [FETCH] }), { body: message({ input_tokens: 100, output_tokens: 10, server_tool_use: { web_search_requests: 7 } }) });
    expect(few.row).toMatchObject({ costMicros: 450, webSearchRequests: 0, usageKnown: false });
    const ws = { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } };
    const out = { id: 'resp_1', object: 'response', model: 'gpt-x', status: 'completed', output: Array.from({ length: 40 }, (_, i) => ({ ...ws, id: `ws_${i}` })), usage: { input_tokens: 100, output_tokens: 10, total_tokens: 110 } };
    const responses = await call('/v1/responses', JSON.stringify({ model: 'gpt-x', input: 'hi', max_output_tokens: 50 }), { body: JSON.stringify(out) });
    // 100 × 2 + 10 × 10, no search
    expect(responses.row).toMatchObject({ costMicros: 300, webSearchRequests: 0, usageKnown: false });
  });

  it('a model priced without a search price takes the default entry\'s ($25 per 1,000)', async () => {
    const r = await call('/v1/messages', messages({ model: 'claude-nosearch' }), { body: message({ input_tokens: 10, output_tokens: 10, server_tool_use: { web_search_requests: 1 } }) });
    // 10 × 1 + 10 × 1 + 25,000
    expect(r.row).toMatchObject({ costMicros: 25_020, webSearchRequests: 1 });
  });

  it('the reservation holds max_uses searches (else 10): a tree with room for the tokens but not the searches refuses the call', async () => {
    const body = messages({ tools: [SEARCH(5)] });
    // worst case of the tokens: ⌈bytes/3⌉ input tokens + 10,000 per search allowed (what the
    // results may add, server-input.ts) at the dearest input-side rate (6 µ$) + 1,000 output at 15 µ$
    const tokens = (Math.ceil(Buffer.byteLength(body) / 3) + 5 * 10_000) * 6 + 1000 * 15;
    const ok = { body: message({ input_tokens: 1, output_tokens: 1 }) };
    expect((await call('/v1/messages', body, ok, tokens + 5 * 10_000 - 1)).status).toBe(402);
    expect((await call('/v1/messages', body, ok, tokens + 5 * 10_000)).status).toBe(200);
    const unbounded = messages({ tools: [SEARCH()] });
    const tokens2 = (Math.ceil(Buffer.byteLength(unbounded) / 3) + 10 * 10_000) * 6 + 1000 * 15;
    expect((await call('/v1/messages', unbounded, ok, tokens2 + 10 * 10_000 - 1)).status).toBe(402);
    expect((await call('/v1/messages', unbounded, ok, tokens2 + 10 * 10_000)).status).toBe(200);
    // no search tool: nothing held for searches
    const plain = messages({ tools: [] });
    expect((await call('/v1/messages', plain, ok, Math.ceil(Buffer.byteLength(plain) / 3) * 6 + 1000 * 15)).status).toBe(200);
  });

  it('OpenAI Responses, not streamed: each web_search_call output item is charged', async () => {
    const body = JSON.stringify({ model: 'gpt-x', input: 'search it', max_output_tokens: 1000, tools: [{ type: 'web_search' }] });
    const out = {
      id: 'resp_1', object: 'response', model: 'gpt-x', status: 'completed',
      output: [
        { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } },
        { type: 'web_search_call', id: 'ws_2', status: 'completed', action: { type: 'search', query: 'r' } },
        { type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] },
      ],
      usage: { input_tokens: 100, output_tokens: 50, total_tokens: 150 },
    };
    const r = await call('/v1/responses', body, { body: JSON.stringify(out) });
    expect(r.status).toBe(200);
    // 100 × 2 + 50 × 10 + 2 × 10,000
    expect(r.row).toMatchObject({ costMicros: 20_700, webSearchRequests: 2, usageKnown: true });
  });

  it('OpenAI Responses, streamed: the web_search_call items of response.completed are charged', async () => {
    const body = JSON.stringify({ model: 'gpt-x', input: 'search it', stream: true, max_output_tokens: 1000, tools: [{ type: 'web_search_preview' }] });
    const ws = { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } };
    const events = [
      sse('response.created', { response: { id: 'resp_1', model: 'gpt-x', status: 'in_progress' } }),
      sse('response.output_item.added', { output_index: 0, item: { ...ws, status: 'in_progress' } }),
      sse('response.output_item.done', { output_index: 0, item: ws }),
      sse('response.output_text.delta', { delta: 'ok' }),
      sse('response.completed', { response: { id: 'resp_1', model: 'gpt-x', status: 'completed', output: [ws, { type: 'message', id: 'msg_1', content: [] }], usage: { input_tokens: 100, output_tokens: 50, total_tokens: 150 } } }),
    ];
    const r = await call('/v1/responses', body, { headers: SSE_HEADERS, body: events });
    // 200 + 500 + 10,000
    expect(r.row).toMatchObject({ costMicros: 10_700, webSearchRequests: 1, usageKnown: true });
  });

  it('the ledger keeps the count (model_calls.web_search_requests, migration 0020)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flotilla-search-'));
    try {
      const s = await openSqliteStore(join(dir, 'flotilla.db'));
      const job = await s.createJob({ parentId: null, agent: 'a', agentVersion: '1', input: {}, selector: {}, priority: 0, budgetMicros: 1_000_000, now: 1 });
      const r = await s.reserveBudget(job.id, 50_000, 1);
      if (!r?.ok) throw new Error('must fit');
      const row = { jobId: job.id, attempt: 0, provider: 'anthropic', model: 'claude-x', api: 'anthropic-messages', streamed: false, httpStatus: 200, inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, usageKnown: true, webSearchRequests: 4, costMicros: 40_018, startedAt: 1, durationMs: 1 };
      await s.settleBudget(job.id, r.reservationId, 40_018, 2, row);
      await s.recordModelCall({ ...row, webSearchRequests: undefined });
      await s.close();
      const db = new BetterSqlite3(join(dir, 'flotilla.db'), { readonly: true });
      expect(db.prepare('select web_search_requests as n from model_calls order by id').all()).toEqual([{ n: 4 }, { n: 0 }]);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('web search prices and bounds', () => {
  it('the shipped table prices Anthropic searches at $10 per 1,000 and has a default for the rest', () => {
    const table = loadPriceTable();
    expect(priceFor(table, 'claude-sonnet-4-5').webSearch).toBe(10);
    expect(priceFor(table, 'claude-opus-4-1-20250805').webSearch).toBe(10);
    expect(table.default.webSearch).toBeGreaterThanOrEqual(10);
  });

  it('webSearchBound reads max_uses (summed over search tools) and max_tool_calls, else the default', () => {
    expect(webSearchBound({ tools: [SEARCH(3), FETCH] }, 'anthropic-messages')).toEqual({ uses: 3, declared: true });
    expect(webSearchBound({ tools: [SEARCH(3), SEARCH()] }, 'anthropic-messages')).toEqual({ uses: 3 + DEFAULT_WEB_SEARCH_USES, declared: false });
    expect(webSearchBound({ tools: [FETCH] }, 'anthropic-messages')).toBeNull();
    expect(webSearchBound({ messages: [] }, 'anthropic-messages')).toBeNull();
    expect(webSearchBound({ tools: [{ type: 'web_search' }], max_tool_calls: 4 }, 'openai-responses')).toEqual({ uses: 4, declared: true });
    expect(webSearchBound({ tools: [{ type: 'web_search_preview' }] }, 'openai-responses')).toEqual({ uses: DEFAULT_WEB_SEARCH_USES, declared: false });
    expect(webSearchBound({ tools: [{ type: 'function', name: 'f' }] }, 'openai-responses')).toBeNull();
    expect(webSearchBound({ tools: [{ type: 'web_search' }] }, 'openai-chat')).toBeNull();
  });
});

/**
 * Per-call fees of OpenAI Responses built-in tools (tool-fees.ts), through real gateway calls
 * to a fake OpenAI upstream: file_search $2.50 per 1,000 calls (2,500 µ$ each); code_interpreter
 * $0.03 per container created (30,000 µ$; 4 GB $0.12 = 120,000 µ$); image_generation a flat
 * per-image estimate (gpt-image-1: low 1024x1024 $0.011 = 11,000 µ$, high 1024x1024 $0.167 =
 * 167,000 µ$, high at the larger sizes $0.25 = 250,000 µ$; medium 1024x1024 $0.042 = 42,000 µ$;
 * gpt-image-1-mini: low 1024x1024 $0.005, medium portrait $0.015, high 1024x1024 $0.036),
 * the usage then marked estimated. Model gpt-x: 2 µ$ per input token, 10 µ$ per output token,
 * so usage {input 100, output 50} is 200 + 500 = 700 µ$. Every expected cost is worked out by
 * hand from these figures.
 */
import { describe, expect, it } from 'vitest';
import type { PriceTable } from './prices.js';
import { price, sse, SSE_HEADERS } from './test-metering.js';
import { forFile, startGateway } from './test-server.js';
import type { FakeReply } from './test-upstream.js';

const PRICES: PriceTable = {
  version: 't',
  models: { 'gpt-x': { ...price(2, 10, 2, 2, 1), webSearch: 10 } },
  default: { ...price(1000, 1000, 1000, 1000, 1000), webSearch: 25 },
};
const USAGE = { input_tokens: 100, output_tokens: 50, total_tokens: 150 };
const TOKENS = 700;
const MESSAGE = { type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] };
const fileSearch = (i: number) => ({ type: 'file_search_call', id: `fs_${i}`, status: 'completed', queries: ['q'] });
const interpreter = (i: number, container: string) => ({ type: 'code_interpreter_call', id: `ci_${i}`, status: 'completed', container_id: container, code: 'print(1)' });
const image = (i: number) => ({ type: 'image_generation_call', id: `ig_${i}`, status: 'completed', result: 'aGk=' });
const request = (tools: object[], o: { stream?: boolean; maxToolCalls?: number; input?: unknown } = {}) =>
  JSON.stringify({ model: 'gpt-x', input: o.input ?? 'do it', max_output_tokens: 1000, stream: o.stream ?? false, tools, ...(o.maxToolCalls !== undefined ? { max_tool_calls: o.maxToolCalls } : {}) });
const reply = (output: object[]) => ({ body: JSON.stringify({ id: 'resp_1', object: 'response', model: 'gpt-x', status: 'completed', output: [...output, MESSAGE], usage: USAGE }) });

const gw = forFile(() => startGateway({ job: { token: 'flj_tool_fees_0123456789abcdefghijk', id: 9, budgetMicros: 10_000_000 }, openai: 'openai-compatible', config: { prices: PRICES, budgetWaitMs: 0 } }));

/** One /v1/responses call with a fresh budget of `limit` µ$; its status, the ledger row and what the tree was charged (µ$). */
async function call(body: string, r: FakeReply, limit = 10_000_000) {
  gw.setReply(r);
  gw.store.budgets.set(9, { limit, spent: 0, reserved: 0 });
  const before = gw.store.calls.length;
  const res = await gw.post('/v1/responses', body);
  const text = await res.text();
  const b = gw.store.budgets.get(9)!;
  expect(b.reserved).toBe(0);
  return { status: res.status, text, row: gw.store.calls[before]!, spent: b.spent };
}

describe('OpenAI Responses built-in tool fees', () => {
  it('file_search: each file_search_call item at $2.50 per 1,000 on top of the tokens (vector_store_ids are not refused)', async () => {
    const r = await call(request([{ type: 'file_search', vector_store_ids: ['vs_1'] }]), reply([fileSearch(1), fileSearch(2), fileSearch(3)]));
    expect(r.status).toBe(200);
    // 700 + 3 × 2,500
    expect(r.spent).toBe(8_200);
    expect(r.row).toMatchObject({ costMicros: 8_200, usageKnown: true, webSearchRequests: 0 });
  });

  it('code_interpreter auto: one fee per distinct container_id; container.file_ids are not refused; memory_limit 4g at $0.12', async () => {
    const tool = { type: 'code_interpreter', container: { type: 'auto', file_ids: ['file-abc'] } };
    const r = await call(request([tool]), reply([interpreter(1, 'cntr_a'), interpreter(2, 'cntr_a'), interpreter(3, 'cntr_b')]));
    expect(r.status).toBe(200);
    // 700 + 2 containers × 30,000
    expect(r.row).toMatchObject({ costMicros: 60_700, usageKnown: true });
    const big = await call(request([{ type: 'code_interpreter', container: { type: 'auto', memory_limit: '4g' } }]), reply([interpreter(1, 'cntr_c')]));
    // 700 + 120,000
    expect(big.row).toMatchObject({ costMicros: 120_700, usageKnown: true });
  });

  it('code_interpreter: a container named by id, or by an input code_interpreter_call, is not charged again', async () => {
    const named = await call(request([{ type: 'code_interpreter', container: 'cntr_old' }]), reply([interpreter(1, 'cntr_old'), interpreter(2, 'cntr_old')]));
    expect(named.row).toMatchObject({ costMicros: TOKENS, usageKnown: true });
    // stateless replay: the earlier turn's item names cntr_old; only cntr_new is created now
    const input = [{ role: 'user', content: 'go on' }, interpreter(0, 'cntr_old'), { role: 'user', content: 'more' }];
    const replay = await call(request([{ type: 'code_interpreter', container: { type: 'auto' } }], { input }), reply([interpreter(1, 'cntr_old'), interpreter(2, 'cntr_new')]));
    // 700 + 30,000
    expect(replay.row).toMatchObject({ costMicros: 30_700, usageKnown: true });
  });

  it('image_generation: a flat per-image estimate by the tool\'s quality and size (auto → the dearest), usage marked estimated', async () => {
    const low = await call(request([{ type: 'image_generation', quality: 'low', size: '1024x1024' }]), reply([image(1), image(2)]));
    // 700 + 2 × 11,000
    expect(low.row).toMatchObject({ costMicros: 22_700, usageKnown: false, inputTokens: 100, outputTokens: 50 });
    const high = await call(request([{ type: 'image_generation', size: '1024x1024' }]), reply([image(1)]));
    // quality absent (auto) → high: 700 + 167,000
    expect(high.row).toMatchObject({ costMicros: 167_700, usageKnown: false });
    const auto = await call(request([{ type: 'image_generation', quality: 'auto', size: 'auto' }]), reply([image(1)]));
    // high at the larger size: 700 + 250,000
    expect(auto.row).toMatchObject({ costMicros: 250_700, usageKnown: false });
  });

  it('image_generation: the tool\'s model picks the per-image price (gpt-image-1-mini its own; gpt-image-1 and unlisted models gpt-image-1\'s)', async () => {
    // OpenAI pricing, gpt-image-1-mini: low 1024x1024 $0.005, medium portrait $0.015, high 1024x1024 $0.036
    const low = await call(request([{ type: 'image_generation', model: 'gpt-image-1-mini', quality: 'low', size: '1024x1024' }]), reply([image(1), image(2)]));
    // 700 + 2 × 5,000
    expect(low.row).toMatchObject({ costMicros: 10_700, usageKnown: false });
    const medium = await call(request([{ type: 'image_generation', model: 'gpt-image-1-mini', quality: 'medium', size: '1024x1536' }]), reply([image(1)]));
    // 700 + 15,000
    expect(medium.row).toMatchObject({ costMicros: 15_700, usageKnown: false });
    const auto = await call(request([{ type: 'image_generation', model: 'gpt-image-1-mini', size: '1024x1024' }]), reply([image(1)]));
    // quality absent → high: 700 + 36,000
    expect(auto.row).toMatchObject({ costMicros: 36_700, usageKnown: false });
    const full = await call(request([{ type: 'image_generation', model: 'gpt-image-1', quality: 'low', size: '1024x1024' }]), reply([image(1)]));
    // 700 + 11,000
    expect(full.row).toMatchObject({ costMicros: 11_700, usageKnown: false });
    const unlisted = await call(request([{ type: 'image_generation', model: 'gpt-image-9', quality: 'low', size: '1024x1024' }]), reply([image(1)]));
    // not listed: gpt-image-1's low square, 700 + 11,000
    expect(unlisted.row).toMatchObject({ costMicros: 11_700, usageKnown: false });
    const both = await call(request([{ type: 'image_generation', model: 'gpt-image-1-mini', quality: 'high', size: '1024x1024' }, { type: 'image_generation', quality: 'low', size: '1024x1024' }]), reply([image(1)]));
    // two image tools: each image charged the dearer tool's price, 36,000 (mini high) over 11,000: 700 + 36,000
    expect(both.row).toMatchObject({ costMicros: 36_700, usageKnown: false });
  });

  it('streamed: the items of output_item events and response.completed are charged once each', async () => {
    const body = request([{ type: 'file_search', vector_store_ids: ['vs_1'] }, { type: 'code_interpreter', container: { type: 'auto' } }, { type: 'image_generation', quality: 'medium', size: '1024x1024' }], { stream: true });
    const { container_id: _, ...ciAdded } = interpreter(2, 'cntr_a');
    const items = [fileSearch(1), interpreter(2, 'cntr_a'), image(3)];
    const events = [
      sse('response.created', { response: { id: 'resp_1', model: 'gpt-x', status: 'in_progress' } }),
      sse('response.output_item.added', { output_index: 0, item: { ...fileSearch(1), status: 'in_progress' } }),
      sse('response.output_item.done', { output_index: 0, item: fileSearch(1) }),
      // the container is named only when the item is done
      sse('response.output_item.added', { output_index: 1, item: { ...ciAdded, status: 'in_progress' } }),
      sse('response.output_item.done', { output_index: 1, item: interpreter(2, 'cntr_a') }),
      sse('response.output_item.added', { output_index: 2, item: { ...image(3), status: 'in_progress', result: null } }),
      sse('response.output_item.done', { output_index: 2, item: image(3) }),
      sse('response.output_text.delta', { delta: 'ok' }),
      sse('response.completed', { response: { id: 'resp_1', model: 'gpt-x', status: 'completed', output: [...items, MESSAGE], usage: USAGE } }),
    ];
    const r = await call(body, { headers: SSE_HEADERS, body: events });
    expect(r.status).toBe(200);
    // 700 + 2,500 + 30,000 + 42,000
    expect(r.row).toMatchObject({ costMicros: 75_200, usageKnown: false, streamed: true });
  });

  it('a stream that breaks before response.completed: the items it showed are charged in the estimate', async () => {
    const body = request([{ type: 'file_search', vector_store_ids: ['vs_1'] }], { stream: true });
    const events = [
      sse('response.created', { response: { id: 'resp_1', model: 'gpt-x', status: 'in_progress' } }),
      sse('response.output_item.done', { output_index: 0, item: fileSearch(1) }),
      sse('response.output_item.done', { output_index: 1, item: fileSearch(2) }),
    ];
    const r = await call(body, { headers: SSE_HEADERS, body: events });
    expect(r.row).toMatchObject({ usageKnown: false });
    // the estimate's tokens (⌈bytes / 4⌉ input at 2 µ$, 1 output token at 10 µ$) + 2 × 2,500
    const tokens = Math.ceil(Buffer.byteLength(body) / 4) * 2 + 10;
    expect(r.row.costMicros).toBe(tokens + 5_000);
  });

  it('more items than max_tool_calls: charged at the bound (the dearest kind first), as an estimate', async () => {
    const r = await call(request([{ type: 'file_search', vector_store_ids: ['vs_1'] }, { type: 'code_interpreter', container: { type: 'auto' } }], { maxToolCalls: 2 }), reply([fileSearch(1), fileSearch(2), fileSearch(3), interpreter(4, 'cntr_a')]));
    // 2 kept: the container (30,000) and one file search (2,500): 700 + 32,500
    expect(r.row).toMatchObject({ costMicros: 33_200, usageKnown: false });
  });

  it('items of a tool the request did not enable are charged no fee, as an estimate (they were charged at the dearest fees, past the reservation)', async () => {
    // only file_search enabled: 2 searches × 2,500; the image and the new container reported beside them are charged nothing
    const some = await call(request([{ type: 'file_search', vector_store_ids: ['vs_1'] }]), reply([fileSearch(1), fileSearch(2), image(3), interpreter(4, 'cntr_a')]));
    expect(some.row).toMatchObject({ costMicros: TOKENS + 5_000, usageKnown: false });
    // no tool at all: the tokens only
    const none = await call(JSON.stringify({ model: 'gpt-x', input: 'hi', max_output_tokens: 1000 }), reply([fileSearch(1), image(2), interpreter(3, 'cntr_b')]));
    expect(none.row).toMatchObject({ costMicros: TOKENS, usageKnown: false });
    expect(none.spent).toBe(TOKENS);
  });

  it('the reservation holds the fees: max_tool_calls × the dearest enabled fee; without it the defaults', async () => {
    const ok = reply([]);
    const declared = request([{ type: 'file_search', vector_store_ids: ['vs_1'] }, { type: 'image_generation', quality: 'medium', size: '1024x1024' }], { maxToolCalls: 4 });
    // tokens: ⌈bytes/3⌉ + 4 uses × 10,000 tokens of file search results (server-input.ts) at 2 µ$, 1,000 output at 10 µ$
    const tokens = (Math.ceil(Buffer.byteLength(declared) / 3) + 4 * 10_000) * 2 + 1000 * 10;
    // fees: 4 × max(2,500, 42,000)
    expect((await call(declared, ok, tokens + 4 * 42_000 - 1)).status).toBe(429);
    expect((await call(declared, ok, tokens + 4 * 42_000)).status).toBe(200);
    const open = request([{ type: 'file_search', vector_store_ids: ['vs_1'] }, { type: 'code_interpreter', container: { type: 'auto' } }, { type: 'image_generation', quality: 'low', size: '1024x1024' }]);
    // 2 content tools × 10 default uses × 10,000 tokens
    const tokens2 = (Math.ceil(Buffer.byteLength(open) / 3) + 20 * 10_000) * 2 + 1000 * 10;
    // fees: 10 file searches × 2,500 + 1 container × 30,000 + 1 image × 11,000
    const fees2 = 25_000 + 30_000 + 11_000;
    expect((await call(open, ok, tokens2 + fees2 - 1)).status).toBe(429);
    expect((await call(open, ok, tokens2 + fees2)).status).toBe(200);
  });
  it('web searches and the other built-in tools share max_tool_calls (OpenAI: "across all built-in tool calls"): reserved as that count at the dearest fee, charged within it (fresh tester: reserved as each kind at the whole count)', async () => {
    const webSearch = (i: number) => ({ type: 'web_search_call', id: `ws_${i}`, status: 'completed', action: { type: 'search', query: 'q' } });
    const tools = [{ type: 'web_search' }, { type: 'file_search', vector_store_ids: ['vs_1'] }, { type: 'image_generation', quality: 'medium', size: '1024x1024' }];
    const body = request(tools, { maxToolCalls: 4 });
    // tokens: ⌈bytes/3⌉ + 4 uses × 10,000 tokens of tool results (server-input.ts) at 2 µ$, 1,000 output at 10 µ$
    const tokens = (Math.ceil(Buffer.byteLength(body) / 3) + 4 * 10_000) * 2 + 1000 * 10;
    // fees: 4 × max(10,000 a search, 2,500 a file search, 42,000 a medium image) = 168,000 (not 4 × 10,000 + 4 × 42,000)
    expect((await call(body, reply([]), tokens + 168_000 - 1)).status).toBe(429);
    expect((await call(body, reply([]), tokens + 168_000)).status).toBe(200);
    // 3 searches and 3 images reported: the searches first, then 4 − 3 = 1 image: 700 + 3 × 10,000 + 42,000, an estimate
    const r = await call(body, reply([webSearch(1), webSearch(2), webSearch(3), image(4), image(5), image(6)]));
    expect(r.row).toMatchObject({ costMicros: 72_700, webSearchRequests: 3, usageKnown: false });
    expect(r.spent).toBe(72_700);
  });
});

/**
 * Input the provider bills that the request body does not carry (server-input.ts), end to end:
 * a real gateway on a real port in front of a fake upstream, over a real SQLite store.
 * - Requests referring to provider-stored state (Responses `previous_response_id`,
 *   `conversation`, `prompt`, `item_reference`; a file by id in any wire format) are refused 400
 *   in the wire format's own shape, naming the field; recorded as refused, nothing reserved,
 *   nothing forwarded.
 * - Requests with server tools whose results enter the context (web search, web fetch, code
 *   execution, search models) are charged the input the provider reports, not clipped at the
 *   body's bound, marked known; their reservation holds an input allowance per tool use
 *   (`max_uses` × `max_content_tokens` where given, else 10,000 tokens a use, 10 uses).
 * - Conflicting output limits (Chat: both max_tokens and max_completion_tokens; Responses:
 *   max_tokens / max_completion_tokens) are refused 400 naming the field, nothing forwarded.
 * Prices (USD per MTok = µ$ per token): claude-x 3 in / 15 out / 3.75 and 6 cache writes / 0.3
 * cache read, web search $10 per 1,000 (10,000 µ$); gpt-x and gpt-x-search-preview 2 / 10 / 2 /
 * 2 / 1, web search $10 per 1,000. Every expected figure is worked out by hand from these.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import type { PriceTable } from './prices.js';
import { serverInputAllowance } from './server-input.js';
import { urlInput } from './url-input.js';
import { price, sse, SSE_HEADERS } from './test-metering.js';
import { forFile, startGateway, type TestGateway } from './test-server.js';
import { runningJob } from './test-stores.js';
import type { FakeReply } from './test-upstream.js';

const PRICES: PriceTable = {
  version: 't',
  models: {
    'claude-x': { ...price(3, 15, 3.75, 6, 0.3), webSearch: 10 },
    'gpt-x': { ...price(2, 10, 2, 2, 1), webSearch: 10 },
    'gpt-x-search-preview': { ...price(2, 10, 2, 2, 1), webSearch: 10 },
  },
  default: price(1000, 1000, 1000, 1000, 1000),
};

/** The gateway over a fresh SQLite store in a temp folder, shared by the file's tests (each makes its own job). */
const gw = forFile(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-server-input-'));
  const store = await openSqliteStore(join(dir, 'flotilla.db'));
  const g = await startGateway<Store>({ store, openai: 'openai', config: { prices: PRICES, budgetWaitMs: 0 } });
  return {
    ...g,
    close: async () => {
      await g.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  } as TestGateway<Store>;
});

let jobs = 0;

/** Sends `body` to `path` as a fresh root job with `budget` µ$ after the upstream was told to answer `reply`; the reply, what the upstream saw, the job's ledger sums and its tree's budget. */
async function call(path: string, body: object, reply: FakeReply = { body: '{}' }, budget = 10_000_000) {
  const token = `flj_server_input_${++jobs}_0123456789abcdefghij`;
  const job = await runningJob(gw.store, token, { budgetMicros: budget });
  gw.setReply(reply);
  const seenBefore = gw.up.seen.length;
  const res = await gw.post(path, JSON.stringify(body), { token });
  const text = await res.text();
  const [rollup] = await gw.store.costRollup({ by: 'job', since: 0, rootId: job.id });
  const tree = await gw.store.getTreeBudget(job.id, Date.now());
  return { status: res.status, headers: res.headers, json: (text.startsWith('{') ? JSON.parse(text) : {}) as Record<string, unknown>, forwarded: gw.up.seen.length - seenBefore, rollup: rollup!, tree: tree! };
}

/** A refusal: 400, not retried, never forwarded, recorded as one refused $0 call, nothing held. */
function expectRefused(r: Awaited<ReturnType<typeof call>>) {
  expect(r.status).toBe(400);
  expect(r.headers.get('x-should-retry')).toBe('false');
  expect(r.forwarded).toBe(0);
  expect(r.rollup).toMatchObject({ calls: 1, refusedCalls: 1, costMicros: 0, inputTokens: 0 });
  expect(r.tree).toMatchObject({ spentMicros: 0, reservedMicros: 0 });
}

const STORED = /cannot bound input stored on the provider/;

const responsesReply = (usage: object, output: object[] = []): FakeReply => ({
  body: JSON.stringify({ id: 'resp_1', object: 'response', status: 'completed', model: 'gpt-x', output: [...output, { type: 'message', id: 'msg_1', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] }], usage }),
});
const message = (usage: object): FakeReply => ({ body: JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage }) });

describe('requests referring to provider-stored state are refused, in the wire format\'s shape', () => {
  const base = { model: 'gpt-x', input: 'continue where we left off', max_output_tokens: 20 };

  it.each([
    ['previous_response_id', { previous_response_id: 'resp_abc' }, 'previous_response_id'],
    ['conversation (id)', { conversation: 'conv_123' }, 'conversation'],
    ['conversation (object)', { conversation: { id: 'conv_123' } }, 'conversation'],
    ['prompt (a stored prompt)', { prompt: { id: 'pmpt_123', version: '2' } }, 'prompt'],
    ['an item_reference input item', { input: [{ type: 'item_reference', id: 'msg_abc' }] }, 'input.0'],
    ['an input_file by file_id', { input: [{ role: 'user', content: [{ type: 'input_text', text: 'read it' }, { type: 'input_file', file_id: 'file-abc' }] }] }, 'input.0.content.1.file_id'],
  ])('Responses with %s → 400 invalid_request_error naming the field; upstream untouched', async (_name, extra, param) => {
    const r = await call('/v1/responses', { ...base, ...extra });
    expectRefused(r);
    const err = r.json.error as { type: string; param: string; message: string };
    expect(err).toMatchObject({ type: 'invalid_request_error', param });
    expect(err.message.startsWith(`${param}: `)).toBe(true);
    expect(err.message).toMatch(STORED);
  });

  it('Responses: the refusal says what to send instead', async () => {
    const r = await call('/v1/responses', { ...base, previous_response_id: 'resp_abc' });
    expect((r.json.error as { message: string }).message).toContain('send the whole input (store: false) instead');
  });

  it('Responses with previous_response_id: null, conversation: null and store: false goes through (what Codex sends is not refused)', async () => {
    const r = await call('/v1/responses', { ...base, previous_response_id: null, conversation: null, prompt: null, store: false }, responsesReply({ input_tokens: 10, output_tokens: 5 }));
    expect(r.status).toBe(200);
    expect(r.forwarded).toBe(1);
    // 10 × 2 + 5 × 10
    expect(r.rollup).toMatchObject({ calls: 1, refusedCalls: 0, estimatedCalls: 0, costMicros: 70 });
  });

  it('Chat Completions with a file part by file_id → 400 naming messages.0.content.1.file.file_id', async () => {
    const r = await call('/v1/chat/completions', { model: 'gpt-x', max_tokens: 20, messages: [{ role: 'user', content: [{ type: 'text', text: 'read it' }, { type: 'file', file: { file_id: 'file-abc' } }] }] });
    expectRefused(r);
    expect(r.json.error).toMatchObject({ type: 'invalid_request_error', param: 'messages.0.content.1.file.file_id' });
    expect((r.json.error as { message: string }).message).toMatch(STORED);
  });

  it.each([
    ['a document by file_id', [{ type: 'document', source: { type: 'file', file_id: 'file_abc' } }, { type: 'text', text: 'summarise' }], 'messages.0.content.0.source'],
    ['an image by file_id inside a tool_result', [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'image', source: { type: 'file', file_id: 'file_abc' } }] }], 'messages.0.content.0.content.0.source'],
  ])('Messages with %s → Anthropic-shaped 400 naming the block', async (_name, content, field) => {
    const r = await call('/v1/messages', { model: 'claude-x', max_tokens: 20, messages: [{ role: 'user', content }] });
    expectRefused(r);
    expect(r.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const msg = (r.json.error as { message: string }).message;
    expect(msg.startsWith(`${field}: `)).toBe(true);
    expect(msg).toMatch(STORED);
    expect(msg).toContain("send the file's content in the request");
  });

  it('Messages with a container_upload for the code execution tool goes through: the file sits in the container, its printed output is charged as reported', async () => {
    const body = { model: 'claude-x', max_tokens: 20, tools: [{ type: 'code_execution_20250825', name: 'code_execution' }], messages: [{ role: 'user', content: [{ type: 'text', text: 'plot it' }, { type: 'container_upload', file_id: 'file_abc' }] }] };
    const r = await call('/v1/messages', body, message({ input_tokens: 40_000, output_tokens: 20 }));
    expect(r.status).toBe(200);
    expect(r.forwarded).toBe(1);
    // 40,000 × 3 + 20 × 15 = 120,300 µ$, known (code execution's results are reported input)
    expect(r.rollup).toMatchObject({ calls: 1, refusedCalls: 0, estimatedCalls: 0, inputTokens: 40_000, costMicros: 120_300 });
  });
});

describe('server tools that add input: charged what the provider reports, an allowance reserved', () => {
  it('Responses with a web_search tool: 150,000 reported input tokens are charged in full, known (4,200-odd before)', async () => {
    const body = { model: 'gpt-x', input: 'what happened today?', max_output_tokens: 20, tools: [{ type: 'web_search' }] };
    const r = await call('/v1/responses', body, responsesReply({ input_tokens: 150_000, output_tokens: 20 }, [{ type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } }]));
    expect(r.status).toBe(200);
    // 150,000 × 2 + 20 × 10 + 1 search × 10,000 = 310,200 µ$
    expect(r.rollup).toMatchObject({ calls: 1, estimatedCalls: 0, inputTokens: 150_000, outputTokens: 20, costMicros: 310_200 });
    expect(r.tree).toMatchObject({ spentMicros: 310_200, reservedMicros: 0 });
  });

  it('the same Responses request without server tools is still held to its body bound (estimated)', async () => {
    const body = { model: 'gpt-x', input: 'what happened today?', max_output_tokens: 20 };
    const r = await call('/v1/responses', body, responsesReply({ input_tokens: 150_000, output_tokens: 20 }));
    const bound = Buffer.byteLength(JSON.stringify(body)) + 4_096;
    expect(r.rollup).toMatchObject({ estimatedCalls: 1, inputTokens: bound, costMicros: bound * 2 + 200 });
  });

  it('Messages with web_fetch (max_uses 2, max_content_tokens 30,000): 150,000 reported input charged in full; the reservation holds 60,000 input tokens for the fetches', async () => {
    const body = { model: 'claude-x', max_tokens: 20, tools: [{ type: 'web_fetch_20250910', name: 'web_fetch', max_uses: 2, max_content_tokens: 30_000 }], messages: [{ role: 'user', content: 'read https://example.com' }] };
    const reply = message({ input_tokens: 150_000, output_tokens: 20, server_tool_use: { web_fetch_requests: 1 } });
    const r = await call('/v1/messages', body, reply);
    expect(r.status).toBe(200);
    // 150,000 × 3 + 20 × 15 = 450,300 µ$ (web fetch has no per-request fee)
    expect(r.rollup).toMatchObject({ estimatedCalls: 0, inputTokens: 150_000, costMicros: 450_300 });
    // worst case: (⌈bytes / 3⌉ + 2 × 30,000) input tokens at the dearest input-side rate (6 µ$) + 20 × 15
    const worst = (Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 3) + 60_000) * 6 + 20 * 15;
    expect((await call('/v1/messages', body, reply, worst - 1)).status).toBe(402);
    const fits = await call('/v1/messages', body, reply, worst);
    expect(fits.status).toBe(200);
    // charged past its reservation: what the provider reported (documented overshoot)
    expect(fits.tree).toMatchObject({ spentMicros: 450_300, reservedMicros: 0 });
  });

  it('Messages, streamed, with web_search (no max_uses): 150,000 input + 2 searches charged as reported; 10 × 10,000 input tokens and 10 searches reserved', async () => {
    const body = { model: 'claude-x', max_tokens: 20, stream: true, tools: [{ type: 'web_search_20250305', name: 'web_search' }], messages: [{ role: 'user', content: 'search it' }] };
    const stream: FakeReply = {
      headers: SSE_HEADERS,
      body: [
        sse('message_start', { message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-x', content: [], usage: { input_tokens: 150_000, output_tokens: 1 } } }),
        sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'ok' } }),
        sse('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 20, server_tool_use: { web_search_requests: 2 } } }),
        sse('message_stop', {}),
      ],
    };
    const r = await call('/v1/messages', body, stream);
    expect(r.status).toBe(200);
    // 150,000 × 3 + 20 × 15 + 2 × 10,000 = 470,300 µ$
    expect(r.rollup).toMatchObject({ estimatedCalls: 0, inputTokens: 150_000, costMicros: 470_300 });
    // (⌈bytes / 3⌉ + 100,000) × 6 + 20 × 15 + 10 searches × 10,000
    const worst = (Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 3) + 100_000) * 6 + 20 * 15 + 100_000;
    expect((await call('/v1/messages', body, stream, worst - 1)).status).toBe(402);
    expect((await call('/v1/messages', body, stream, worst)).status).toBe(200);
  });

  it('Chat Completions search model: 50,000 reported prompt tokens charged in full, with its search', async () => {
    const body = { model: 'gpt-x-search-preview', max_tokens: 20, messages: [{ role: 'user', content: 'news?' }] };
    const r = await call('/v1/chat/completions', body, { body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-x-search-preview', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' } }], usage: { prompt_tokens: 50_000, completion_tokens: 20 } }) });
    expect(r.status).toBe(200);
    // 50,000 × 2 + 20 × 10 + 1 search × 10,000 = 110,200
    expect(r.rollup).toMatchObject({ estimatedCalls: 0, inputTokens: 50_000, costMicros: 110_200 });
  });

  it('the sanity cap: 60,000,000 input + 60,000,000 cache read reported with a web_search tool → 100,000,000 in all, estimated', async () => {
    const body = { model: 'claude-x', max_tokens: 20, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }], messages: [{ role: 'user', content: 'search it' }] };
    const r = await call('/v1/messages', body, message({ input_tokens: 60_000_000, cache_read_input_tokens: 60_000_000, output_tokens: 20 }));
    expect(r.status).toBe(200);
    // scaled to the cap in proportion: 50,000,000 each → 150,000,000 + 15,000,000 + 300 µ$
    expect(r.rollup).toMatchObject({ estimatedCalls: 1, inputTokens: 50_000_000, cacheReadTokens: 50_000_000, costMicros: 165_000_300 });
  });
});

describe('conflicting output limits are refused, not forwarded', () => {
  it('Chat Completions with max_tokens 10,000 and max_completion_tokens 5 → 400 naming both', async () => {
    const r = await call('/v1/chat/completions', { model: 'gpt-x', max_tokens: 10_000, max_completion_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
    expectRefused(r);
    const err = r.json.error as { type: string; message: string; param: string };
    expect(err.type).toBe('invalid_request_error');
    expect(err.message).toMatch(/^max_tokens and max_completion_tokens: set only one of them/);
  });

  it.each(['max_tokens', 'max_completion_tokens'])('Responses with max_output_tokens 5 and %s 10,000 → 400 naming it, saying to use max_output_tokens', async (field) => {
    const r = await call('/v1/responses', { model: 'gpt-x', input: 'hi', max_output_tokens: 5, [field]: 10_000 });
    expectRefused(r);
    expect(r.json.error).toMatchObject({ type: 'invalid_request_error', param: field });
    expect((r.json.error as { message: string }).message).toBe(`${field}: not a Responses field: use max_output_tokens (the output limit the gateway reserves for and meters)`);
  });

  it('Chat Completions with max_completion_tokens alone still goes through', async () => {
    const r = await call('/v1/chat/completions', { model: 'gpt-x', max_completion_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }, { body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-x', choices: [], usage: { prompt_tokens: 7, completion_tokens: 5 } }) });
    expect(r.status).toBe(200);
    expect(r.rollup).toMatchObject({ estimatedCalls: 0, costMicros: 7 * 2 + 5 * 10 });
  });
});

describe('serverInputAllowance: what each wire format\'s server tools reserve', () => {
  it('Anthropic: max_uses × max_content_tokens where given, else 10 uses × 10,000 tokens; each MCP server 10 uses', () => {
    expect(serverInputAllowance({ tools: [{ type: 'code_execution_20250825', name: 'code_execution' }, { type: 'web_fetch_20250910', name: 'web_fetch', max_content_tokens: 5_000 }, { name: 'Read', input_schema: {} }] }, 'anthropic-messages')).toEqual({ uses: 20, tokens: 10 * 10_000 + 10 * 5_000 });
    expect(serverInputAllowance({ tools: [], mcp_servers: [{ type: 'url', url: 'https://mcp.example.com', name: 'x' }] }, 'anthropic-messages')).toEqual({ uses: 10, tokens: 100_000 });
    expect(serverInputAllowance({ tools: [{ name: 'Bash', input_schema: {} }] }, 'anthropic-messages')).toBeNull();
  });

  it('Responses: max_tool_calls uses in all, else 10 per content tool (web_search, file_search, code_interpreter, mcp); function tools add none', () => {
    const tools = [{ type: 'file_search', vector_store_ids: ['vs_1'] }, { type: 'code_interpreter', container: { type: 'auto' } }, { type: 'function', name: 'f' }];
    expect(serverInputAllowance({ tools }, 'openai-responses')).toEqual({ uses: 20, tokens: 200_000 });
    expect(serverInputAllowance({ tools, max_tool_calls: 3 }, 'openai-responses')).toEqual({ uses: 3, tokens: 30_000 });
    expect(serverInputAllowance({ tools: [{ type: 'function', name: 'f' }] }, 'openai-responses')).toBeNull();
  });

  it('a huge max_uses is held to the 100,000,000-token cap', () => {
    expect(serverInputAllowance({ tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1e12 }] }, 'anthropic-messages')?.tokens).toBe(100_000_000);
  });
});

describe('content the provider fetches by URL (url-input.ts): charged as reported, an allowance reserved', () => {
  it('urlInput: images and documents by URL in each format, nested in a tool result too; inline data and plain text links are not', () => {
    const anthropic = {
      messages: [
        { role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } }, { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }, { type: 'text', text: 'see https://example.com' }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/b.png' } }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] }] },
      ],
    };
    expect(urlInput(anthropic)).toEqual({ images: 2, documents: 1 });
    expect(urlInput({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/c.png' } }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }] })).toEqual({ images: 1, documents: 0 });
    expect(urlInput({ input: [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://example.com/d.pdf' }, { type: 'input_image', image_url: 'https://example.com/e.png' }, { type: 'input_text', text: 'hi' }] }] })).toEqual({ images: 1, documents: 1 });
    expect(urlInput({ messages: [{ role: 'user', content: 'https://example.com/a.pdf' }] })).toBeNull();
  });

  it('serverInputAllowance adds them: 6,000 tokens per image, 10,000 per document, one use each, beside server tools', () => {
    const body = { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }], messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } }, { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }] };
    expect(serverInputAllowance(body, 'anthropic-messages')).toEqual({ uses: 3, tokens: 10_000 + 10_000 + 6_000 });
  });

  it('Messages with a PDF by URL: 150,000 reported input charged in full (known); the reservation holds 10,000 input tokens for it', async () => {
    const body = { model: 'claude-x', max_tokens: 20, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://example.com/report.pdf' } }, { type: 'text', text: 'summarise' }] }] };
    const reply = message({ input_tokens: 150_000, output_tokens: 20 });
    const r = await call('/v1/messages', body, reply);
    expect(r.status).toBe(200);
    // 150,000 × 3 + 20 × 15 = 450,300 µ$
    expect(r.rollup).toMatchObject({ estimatedCalls: 0, inputTokens: 150_000, costMicros: 450_300 });
    // worst case: (⌈bytes / 3⌉ + 10,000) input tokens at the dearest input-side rate (6 µ$) + 20 × 15
    const worst = (Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 3) + 10_000) * 6 + 20 * 15;
    expect((await call('/v1/messages', body, reply, worst - 1)).status).toBe(402);
    expect((await call('/v1/messages', body, reply, worst)).status).toBe(200);
  });

  it('Responses with an input_file by file_url: 150,000 reported input charged in full (known)', async () => {
    const body = { model: 'gpt-x', max_output_tokens: 20, input: [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://example.com/report.pdf' }, { type: 'input_text', text: 'summarise' }] }] };
    const r = await call('/v1/responses', body, responsesReply({ input_tokens: 150_000, output_tokens: 20 }));
    expect(r.status).toBe(200);
    // 150,000 × 2 + 20 × 10 = 300,200 µ$
    expect(r.rollup).toMatchObject({ estimatedCalls: 0, inputTokens: 150_000, costMicros: 300_200 });
  });
});

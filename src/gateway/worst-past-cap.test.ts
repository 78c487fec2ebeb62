/**
 * A call whose worst case is more than any budget can hold ($100,000 per job tree) is refused as
 * a bad request, not reserved for: it would pause its job with a top-up to ask for that the cap
 * refuses (fresh tester: web_search `max_uses: 1e15` → "a top-up of at least $9007199253.740991").
 * Prices: claude-x / gpt-x $10 per 1,000 searches (10,000 µ$ each), so 10,000,001 searches
 * ($100,000.01) is past the cap and 9,000,000 ($90,000 + tokens) is not.
 */
import { describe, expect, it } from 'vitest';
import type { PriceTable } from './prices.js';
import { price } from './test-metering.js';
import { forFile, startGateway } from './test-server.js';

const PRICES: PriceTable = {
  version: 't',
  models: { 'claude-x': { ...price(3, 15, 3.75, 6, 0.3), webSearch: 10 }, 'gpt-x': { ...price(2, 10, 2, 2, 1), webSearch: 10 } },
  default: price(1, 1, 1, 1, 1),
};
const exhausted: number[] = [];
const gw = forFile(() =>
  startGateway({
    job: { token: 'flj_past_cap_0123456789abcdefghijkl', id: 9, budgetMicros: 1_000_000 },
    openai: 'openai-compatible',
    config: { prices: PRICES, budgetWaitMs: 0 },
    onBudgetExhausted: async (job) => void exhausted.push(job.id),
  }),
);
const reply = JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 5 } });

describe('a call no budget could hold', () => {
  it('Anthropic: a web search max_uses past the $100,000 cap gets a 400 naming max_uses, recorded as refused; nothing goes upstream and the job is not paused', async () => {
    gw.reset();
    gw.store.budgets.set(9, { limit: 1_000_000, spent: 0, reserved: 0 });
    for (const uses of [1e15, 10_000_001]) {
      const res = await gw.post('/v1/messages', { model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: uses }] });
      expect(res.status).toBe(400);
      expect(res.headers.get('x-should-retry')).toBe('false');
      const body = (await res.json()) as { type: string; error: { type: string; message: string } };
      expect(body.type).toBe('error');
      expect(body.error.type).toBe('invalid_request_error');
      expect(body.error.message).toMatch(/^this call may cost (up to|more than) \$\d+\.\d{6}, more than any budget can hold \(\$100,000 per job tree\), so no budget or top-up could let it through; it allows 10 output tokens \(max_tokens\), [\d,]+ input tokens/);
      expect(body.error.message).toContain(`${uses.toLocaleString('en-US')} web searches (the web search tools' max_uses): lower what it allows`);
      // 1e15 searches × 10,000 µ$ is past 2^53 − 1 µ$, the bound the figure is held at: "more than" it; 10,000,001 × 10,000 µ$ ≈ $100,000.01 plus tokens is "up to"
      expect(body.error.message.startsWith(uses === 1e15 ? 'this call may cost more than $9007199254.740991,' : 'this call may cost up to $100')).toBe(true);
    }
    expect(gw.up.seen).toHaveLength(0);
    expect(gw.store.calls.map((c) => [c.httpStatus, c.refused, c.costMicros])).toEqual([
      [400, 'invalid_request', 0],
      [400, 'invalid_request', 0],
    ]);
    expect(exhausted).toEqual([]);
    expect(gw.store.budgets.get(9)).toEqual({ limit: 1_000_000, spent: 0, reserved: 0 });
  });

  it('Anthropic: just under the cap is an ordinary call, refused for budget by this $1 tree (not a bad request)', async () => {
    gw.reset();
    gw.setReply({ body: reply });
    gw.store.budgets.set(9, { limit: 1_000_000, spent: 0, reserved: 0 });
    const res = await gw.post('/v1/messages', { model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 9_000_000 }] });
    expect(res.status).toBe(402);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('billing_error');
    expect(gw.up.seen).toHaveLength(0);
    expect(exhausted).toEqual([9]);
    exhausted.length = 0;
  });

  it('OpenAI Responses: file searches past the cap are named as the tool fees they are (fresh tester: the message named only tokens)', async () => {
    gw.reset();
    gw.store.budgets.set(9, { limit: 1_000_000, spent: 0, reserved: 0 });
    const res = await gw.post('/v1/responses', { model: 'gpt-x', input: 'hi', max_output_tokens: 100, max_tool_calls: 1e12, tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] });
    expect(res.status).toBe(400);
    const message = ((await res.json()) as { error: { message: string } }).error.message;
    expect(message).toMatch(/ of built-in tool fees \(their calls, max_tool_calls\): lower what it allows$/);
    expect(message).not.toContain('web searches');
    expect(gw.up.seen).toHaveLength(0);
  });

  it('OpenAI Responses: max_tool_calls past the cap with a web search tool gets a 400 naming max_tool_calls', async () => {
    gw.reset();
    gw.store.budgets.set(9, { limit: 1_000_000, spent: 0, reserved: 0 });
    const res = await gw.post('/v1/responses', { model: 'gpt-x', input: 'hi', max_output_tokens: 16, max_tool_calls: 2 ** 40, tools: [{ type: 'web_search' }] });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain(`${(2 ** 40).toLocaleString('en-US')} web searches (max_tool_calls): lower what it allows`);
    expect(body.error.message).toContain('16 output tokens (max_output_tokens)');
    expect(gw.up.seen).toHaveLength(0);
    expect(gw.store.calls.map((c) => [c.httpStatus, c.refused, c.api])).toEqual([[400, 'invalid_request', 'openai-responses']]);
    expect(exhausted).toEqual([]);
  });
});

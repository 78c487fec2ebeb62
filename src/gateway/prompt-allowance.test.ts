/**
 * The tool-use system prompt and Anthropic-defined tools, billed as input but not in the body
 * (prompt-allowance.ts), are reserved for: a fresh tester's 10 concurrent 221-byte calls with
 * the bash and text editor tools, each billed 1,300 input tokens, reserved ⌈221/3⌉ = 74 input
 * tokens each and together spent 197 % of a $0.035 budget. Real HTTP, a fake upstream, SQLite.
 */
import { describe, expect, it } from 'vitest';
import type { PriceTable } from './prices.js';
import { anthropicToolPromptTokens, TOOL_USE_SYSTEM_PROMPT_TOKENS, UNLISTED_DEFINED_TOOL_TOKENS } from './prompt-allowance.js';
import { onSqlite, runningJob } from './test-stores.js';
import { startGateway } from './test-server.js';
import { heldUpstream } from './test-upstream.js';

describe('anthropicToolPromptTokens', () => {
  it("Anthropic's documented figures: 530 for the tool-use prompt, bash 245, text editor 700, computer use 735 + 499", () => {
    expect(TOOL_USE_SYSTEM_PROMPT_TOKENS).toBe(530);
    expect(anthropicToolPromptTokens({ messages: [] })).toBe(0);
    expect(anthropicToolPromptTokens({ tools: [] })).toBe(0);
    expect(anthropicToolPromptTokens({ tools: [{ name: 'f', input_schema: { type: 'object' } }] })).toBe(530);
    expect(anthropicToolPromptTokens({ tools: [{ type: 'custom', name: 'f', input_schema: {} }] })).toBe(530);
    expect(anthropicToolPromptTokens({ tools: [{ type: 'bash_20250124', name: 'bash' }, { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' }] })).toBe(530 + 245 + 700);
    expect(anthropicToolPromptTokens({ tools: [{ type: 'computer_20250124', name: 'computer' }] })).toBe(530 + 1_234);
    expect(anthropicToolPromptTokens({ tools: [{ type: 'memory_20250818', name: 'memory' }] })).toBe(530 + UNLISTED_DEFINED_TOOL_TOKENS);
    // server tools only: their own allowance (server-input.ts) covers them
    expect(anthropicToolPromptTokens({ tools: [{ type: 'web_search_20250305', name: 'web_search' }] })).toBe(0);
    expect(anthropicToolPromptTokens({ tools: [{ type: 'web_search_20250305', name: 'web_search' }, { type: 'bash_20250124', name: 'bash' }] })).toBe(530 + 245);
    expect(anthropicToolPromptTokens('not an object')).toBe(0);
  });
});

const PRICE = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const PRICES: PriceTable = { version: 'test', models: { 'claude-sonnet-4-5': PRICE }, default: PRICE };
const TOKEN = 'flj_toolprompt_0123456789abcdefgh';
const BODY = JSON.stringify({
  model: 'claude-sonnet-4-5',
  max_tokens: 200,
  tools: [
    { type: 'bash_20250124', name: 'bash' },
    { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' },
  ],
  messages: [{ role: 'user', content: 'List the files.' }],
});
// Worked out by hand: (⌈bytes/3⌉ + 530 + 245 + 700) input tokens at the dearest input-side rate
// (6 µ$) + 200 output tokens at 15 µ$.
const WORST = (Math.ceil(Buffer.byteLength(BODY) / 3) + 530 + 245 + 700) * 6 + 200 * 15;
// What the upstream bills each call: 1,300 input, 200 output = 3,900 + 3,000 µ$.
const COST = 1_300 * 3 + 200 * 15;
const REPLY = { id: 'msg_t', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 1_300, output_tokens: 200 } };

describe('a call with Anthropic-defined tools reserves their prompt', () => {
  it('10 concurrent calls on a $0.035 tree: only those whose worst case fits reach the upstream; spend ≤ the budget', () =>
    onSqlite(async ([store]) => {
      const up = await heldUpstream({ body: JSON.stringify(REPLY) });
      const gw = await startGateway({ upstream: up, store: store!, via: 'fetch', config: { prices: PRICES, budgetWaitMs: 0 } });
      try {
        const rootId = (await runningJob(store!, TOKEN, { budgetMicros: 35_000, spentMicros: 0 })).id;
        const fit = Math.floor(35_000 / WORST);
        expect(fit).toBe(2); // 2 × 12,294 µ$ fit in $0.035, 3 do not (74 + 1,475 input tokens × 6 + 3,000)
        const calls = Array.from({ length: 10 }, () => gw.post('/v1/messages', BODY, { token: TOKEN }).then((r) => r.status));
        // the refusals come while the admitted calls are held upstream (before the release)
        const settled: number[] = [];
        for (const c of calls) void c.then((x) => settled.push(x));
        await expect.poll(() => settled.length, { timeout: 30_000, interval: 50 }).toBe(10 - fit);
        expect(settled.every((x) => x === 429)).toBe(true);
        expect(up.seen.length).toBe(fit);
        up.release();
        const statuses = await Promise.all(calls);
        expect(statuses.filter((s) => s === 200)).toHaveLength(fit);
        expect(up.seen.length).toBe(fit);
        const after = await store!.getTreeBudget(rootId, Date.now());
        expect(after).toMatchObject({ spentMicros: fit * COST, reservedMicros: 0 });
        expect(after!.spentMicros).toBeLessThanOrEqual(35_000);
      } finally {
        up.release();
        await gw.close();
        await up.close();
      }
    }));
});

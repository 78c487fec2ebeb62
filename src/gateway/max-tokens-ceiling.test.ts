/**
 * An output limit past any model's (max_tokens 1e12, ...) is a bad request, not a budget
 * matter: 400 `invalid_request_error` in the wire format naming the field and the ceiling
 * (request.ts MAX_OUTPUT_TOKENS_CEILING = 1,000,000), recorded as refused `invalid_request`,
 * nothing reserved, the upstream untouched and the job NOT paused (no onBudgetExhausted).
 * Anthropic `max_tokens`; OpenAI `max_tokens` / `max_completion_tokens` (Chat) and
 * `max_output_tokens` (Responses); negative and fractional limits too. Real HTTP, fake upstream.
 */
import { describe, expect, it } from 'vitest';
import { forFile, startGateway } from './test-server.js';

const exhausted: number[] = [];
const gw = forFile(() =>
  startGateway({
    upstream: (r) =>
      r.url.startsWith('/v1/messages')
        ? { body: JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } }) }
        : { body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-4o', choices: [], usage: { prompt_tokens: 10, completion_tokens: 2 } }) },
    // $100: a 1,000,000-token limit at sonnet-4-5's 15 µ$ per output token ($15) fits
    job: { token: 'flj_ceiling_0123456789abcdefghijkl', id: 9, budgetMicros: 100_000_000 },
    openai: 'openai-compatible',
    onBudgetExhausted: async (job) => void exhausted.push(job.id),
  }),
);

const CEILING = 'must be at most 1000000 (the gateway\'s ceiling on output tokens per call)';
const msgs = [{ role: 'user', content: 'x' }];

describe('output limits past the ceiling', () => {
  it('Anthropic max_tokens 1e12: 400 invalid_request_error naming the field and the maximum; no reservation, no upstream call, job not paused', async () => {
    const res = await gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 1e12, messages: msgs });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(await res.json()).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: `max_tokens: ${CEILING}` } });
    expect(gw.store.calls.map((c) => [c.httpStatus, c.refused])).toEqual([[400, 'invalid_request']]);
    expect(gw.store.budgets.get(9) ?? { reserved: 0, spent: 0 }).toMatchObject({ reserved: 0, spent: 0 });
    expect(exhausted).toEqual([]);
    expect(gw.up.seen).toHaveLength(0);
    // past 2^53 too: the same message, not zod's safe-integer one (tester finding)
    const huge = await gw.post('/v1/messages', '{"model":"claude-sonnet-4-5","max_tokens":100000000000000000000000,"messages":[{"role":"user","content":"hi"}]}');
    expect(await huge.json()).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: `max_tokens: ${CEILING}` } });
  });

  it('Anthropic: 1,000,000 itself is allowed (reserved and served); 0, -5 and 2.5 are refused as before', async () => {
    expect((await gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 1_000_000, messages: msgs })).status).toBe(200);
    expect(gw.up.seen).toHaveLength(1);
    for (const bad of [0, -5, 2.5]) {
      const res = await gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: bad, messages: msgs });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/^max_tokens: /);
    }
    expect(gw.up.seen).toHaveLength(1);
    expect(exhausted).toEqual([]);
  });

  it('OpenAI max_completion_tokens / max_tokens / max_output_tokens past the ceiling: 400 with param naming the field; job not paused', async () => {
    const cases: Array<[string, object, string]> = [
      ['/v1/chat/completions', { model: 'gpt-4o', max_completion_tokens: 1e12, messages: msgs }, 'max_completion_tokens'],
      ['/v1/chat/completions', { model: 'gpt-4o', max_tokens: 1_000_001, messages: msgs }, 'max_tokens'],
      ['/v1/responses', { model: 'gpt-4o', max_output_tokens: 1e15, input: 'hi' }, 'max_output_tokens'],
    ];
    for (const [path, body, field] of cases) {
      const res = await gw.post(path, body);
      expect(res.status).toBe(400);
      expect(res.headers.get('x-should-retry')).toBe('false');
      expect(await res.json()).toEqual({ error: { message: `${field}: ${CEILING}`, type: 'invalid_request_error', param: field, code: null } });
    }
    const neg = await gw.post('/v1/responses', { model: 'gpt-4o', max_output_tokens: -1, input: 'hi' });
    expect(neg.status).toBe(400);
    expect(((await neg.json()) as { error: { param: string } }).error.param).toBe('max_output_tokens');
    expect(gw.store.calls.map((c) => c.refused)).toEqual(['invalid_request', 'invalid_request', 'invalid_request', 'invalid_request']);
    expect(exhausted).toEqual([]);
    expect(gw.up.seen).toHaveLength(0);
  });
});

/**
 * Usage an upstream reports is charged as given only when every figure is a possible count:
 * an integer from 0 to 100,000,000 (usage.ts MAX_REPORTED_TOKENS). A figure past that (1e15,
 * 100,000,001) says the call used more than any request allows: it is charged at the request's
 * bound (max_tokens; input: request bytes + 4,096), marked estimated, as a figure just under
 * the limit is (a fresh user found 100,000,001 charged the much smaller estimate below). A
 * negative, fractional or non-number ("NaN") figure makes the call's usage unknown: it is
 * charged the estimate (usage.ts estimateUsage: input ⌈request bytes / 4⌉, output ⌈reply text bytes / 4⌉
 * capped at the request's limit, at least 1) and recorded with usageKnown = false. Real HTTP,
 * a fake upstream reporting each bad figure; gpt-4o: 2.5 µ$ per input and 10 µ$ per output
 * token, claude-sonnet-4-5: 3 and 15 (data/prices.json).
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../core/log.js';
import { textStream } from './test-metering.js';
import { forFile, startGateway } from './test-server.js';
import type { FakeReply } from './test-upstream.js';

/** What the upstream reports next: set by each test. */
let reply: FakeReply = { body: '{}' };
// $10M: room for every call below
const warnings: string[] = [];
const gw = forFile(() => startGateway({ upstream: () => reply, job: { token: 'flj_usage_sanity_0123456789abcdefg', id: 12, budgetMicros: 10_000_000_000_000 }, openai: 'openai-compatible', log: createLogger('warn', (l) => void warnings.push(l)) }));

const anthropicBody = (stream = false) => JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, stream, messages: [{ role: 'user', content: 'count the tokens' }] });
const message = (usage: object) => JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage });
const row = () => {
  const c = gw.store.calls[0]!;
  return { usageKnown: c.usageKnown, input: c.inputTokens, output: c.outputTokens, cacheRead: c.cacheReadTokens, cost: c.costMicros };
};

describe('impossible reported usage is treated as unknown (charged the estimate, marked estimated)', () => {
  const cases: Array<[string, object]> = [
    ['a negative input figure', { input_tokens: -5, output_tokens: 20 }],
    ['a "NaN" string', { input_tokens: 'NaN', output_tokens: 20 }],
    ['a fractional figure', { input_tokens: 10.5, output_tokens: 20 }],
  ];
  for (const [name, usage] of cases) {
    it(`Anthropic, not streamed: ${name}`, async () => {
      const req = anthropicBody();
      reply = { body: message(usage) };
      const res = await gw.post('/v1/messages', req);
      expect(res.status).toBe(200);
      const input = Math.ceil(Buffer.byteLength(req) / 4);
      const output = Math.min(Math.ceil(Buffer.byteLength(reply.body as string) / 4), 100);
      expect(row()).toEqual({ usageKnown: false, input, output, cacheRead: 0, cost: input * 3 + output * 15 });
    });
  }

  it('the largest possible figure (100,000,000) is a count, not impossible; past max_tokens (100) it is charged at 100, as an estimate (usage-bounds.test.ts)', async () => {
    reply = { body: message({ input_tokens: 0, output_tokens: 100_000_000 }) };
    await gw.post('/v1/messages', anthropicBody());
    // not the by-size estimate (⌈reply bytes / 4⌉ ≈ 48): the reported figure, held to its bound
    expect(row()).toMatchObject({ usageKnown: false, input: 0, output: 100, cost: 100 * 15 });
  });

  it('OpenAI Chat, streamed: the usage chunk reports -3 completion tokens → estimated', async () => {
    const chunk = (o: object) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'gpt-4o', ...o })}\n\n`;
    reply = {
      headers: { 'content-type': 'text/event-stream' },
      body: [chunk({ choices: [{ index: 0, delta: { content: 'eight by' } }] }), chunk({ choices: [], usage: { prompt_tokens: 40, completion_tokens: -3 } }), 'data: [DONE]\n\n'],
    };
    const req = JSON.stringify({ model: 'gpt-4o', max_tokens: 50, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
    const res = await gw.post('/v1/chat/completions', req);
    await res.text();
    // the usage is unknown: the valid input figure as reported (40, not ⌈request bytes / 4⌉), output ⌈8 text bytes / 4⌉ = 2
    expect(row()).toEqual({ usageKnown: false, input: 40, output: 2, cacheRead: 0, cost: 40 * 2.5 + 2 * 10 });
  });

  it('OpenAI Responses, not streamed: cached_tokens "NaN" → estimated; a valid report is still known', async () => {
    const req = JSON.stringify({ model: 'gpt-4o', max_output_tokens: 40, input: 'hello' });
    const body = (usage: object) => JSON.stringify({ id: 'r', object: 'response', model: 'gpt-4o', output: [], usage });
    reply = { body: body({ input_tokens: 30, output_tokens: 5, input_tokens_details: { cached_tokens: 'NaN' } }) };
    await gw.post('/v1/responses', req);
    expect(row().usageKnown).toBe(false);
    gw.store.calls.length = 0;
    reply = { body: body({ input_tokens: 30, output_tokens: 5, input_tokens_details: { cached_tokens: 10 } }) };
    await gw.post('/v1/responses', req);
    expect(row()).toMatchObject({ usageKnown: true, input: 20, output: 5, cacheRead: 10 });
  });
});

describe("a figure past 100,000,000 is charged at the request's bound, as an estimate", () => {
  /** µ$ of `nanos` (10⁻⁹ USD), to the nearest, half up, as the ledger rounds (core/pricing.ts). */
  const micros = (nanos: number) => Math.floor((nanos + 500) / 1000);

  it('Anthropic, not streamed: 1e15 output tokens → max_tokens (100) of output', async () => {
    reply = { body: message({ input_tokens: 10, output_tokens: 1e15 }) };
    warnings.length = 0;
    await gw.post('/v1/messages', anthropicBody());
    expect(row()).toEqual({ usageKnown: false, input: 10, output: 100, cacheRead: 0, cost: 10 * 3 + 100 * 15 });
    // the warning says what was reported and what was charged (it said output=100000001, neither: a fresh tester)
    expect(warnings.map((l) => l.replace(/^\S+ /, ''))).toEqual([
      'warn gateway: the upstream reported more tokens than the request allows: charged the bound, as an estimate job=12 model="claude-sonnet-4-5" input=10 output="over 100000000" chargedInput=10 chargedOutput=100\n',
    ]);
  });

  it('Anthropic, not streamed: 100,000,001 cache-read tokens → the input bound, split in proportion', async () => {
    const req = anthropicBody();
    reply = { body: message({ input_tokens: 10, output_tokens: 20, cache_read_input_tokens: 100_000_001 }) };
    await gw.post('/v1/messages', req);
    // bound B = request bytes + 4,096; reported 10 : 100,000,001 → cache read ⌊B × 100,000,001 / 100,000,011⌋ = B − 1, input 1
    const b = Buffer.byteLength(req) + 4096;
    expect(row()).toEqual({ usageKnown: false, input: 1, output: 20, cacheRead: b - 1, cost: micros(1 * 3000 + (b - 1) * 300 + 20 * 15_000) });
  });

  it('charged no less than the largest possible figure: 99,999,999 and 1e12 input tokens cost the same', async () => {
    const req = anthropicBody();
    const costs: number[] = [];
    for (const input of [99_999_999, 100_000_001, 1e12]) {
      gw.store.calls.length = 0;
      reply = { body: message({ input_tokens: input, output_tokens: 5 }) };
      await gw.post('/v1/messages', req);
      costs.push(row().cost);
    }
    const b = Buffer.byteLength(req) + 4096;
    expect(costs).toEqual([b * 3 + 5 * 15, b * 3 + 5 * 15, b * 3 + 5 * 15]);
  });

  it('Anthropic, streamed: message_delta reports 1e15 output tokens → max_tokens (100) of output', async () => {
    reply = textStream({ input_tokens: 1000, output_tokens: 1 }, 'twelve bytes', { output_tokens: 1e15 });
    const res = await gw.post('/v1/messages', anthropicBody(true));
    await res.text();
    expect(row()).toEqual({ usageKnown: false, input: 1000, output: 100, cacheRead: 0, cost: 1000 * 3 + 100 * 15 });
  });

  it('OpenAI Chat, not streamed: prompt_tokens 1e15 → the input bound (request bytes + 4,096)', async () => {
    const req = JSON.stringify({ model: 'gpt-4o', max_tokens: 50, messages: [{ role: 'user', content: 'hi there' }] });
    reply = { body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' } }], usage: { prompt_tokens: 1e15, completion_tokens: 2 } }) };
    await gw.post('/v1/chat/completions', req);
    const b = Buffer.byteLength(req) + 4096;
    expect(row()).toEqual({ usageKnown: false, input: b, output: 2, cacheRead: 0, cost: micros(b * 2500 + 2 * 10_000) });
  });

  it('OpenAI Chat, not streamed: prompt_tokens 1e400 (JSON read as Infinity) → the input bound', async () => {
    const req = JSON.stringify({ model: 'gpt-4o', max_tokens: 50, messages: [{ role: 'user', content: 'hi there' }] });
    reply = { body: '{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1e400,"completion_tokens":2}}' };
    await gw.post('/v1/chat/completions', req);
    const b = Buffer.byteLength(req) + 4096;
    expect(row()).toEqual({ usageKnown: false, input: b, output: 2, cacheRead: 0, cost: micros(b * 2500 + 2 * 10_000) });
  });
});

describe('a served call reported as using no token at all: its usage is unknown (the estimate, never $0)', () => {
  it('Anthropic, not streamed and streamed: input 0 and output 0 → input ⌈request bytes / 4⌉, output by the reply as when it reports none', async () => {
    for (const stream of [false, true]) {
      gw.store.calls.length = 0;
      const req = anthropicBody(stream);
      reply = stream ? textStream({ input_tokens: 0, output_tokens: 0 }, 'x'.repeat(40), { output_tokens: 0 }) : { body: message({ input_tokens: 0, output_tokens: 0 }) };
      const res = await gw.post('/v1/messages', req);
      await res.text();
      const input = Math.ceil(Buffer.byteLength(req) / 4);
      // output: a stream's 40 text bytes / 4 = 10; a whole body's bytes / 4, at most max_tokens (100)
      const output = stream ? 10 : Math.min(Math.ceil(Buffer.byteLength(reply.body as string) / 4), 100);
      expect(row(), `stream ${stream}`).toEqual({ usageKnown: false, input, output, cacheRead: 0, cost: input * 3 + output * 15 });
    }
  });

  it('OpenAI Chat, not streamed: prompt 0 and completion 0 → the estimate, output at most max_tokens (50)', async () => {
    const req = JSON.stringify({ model: 'gpt-4o', max_tokens: 50, messages: [{ role: 'user', content: 'hi there' }] });
    reply = { body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content: 'ok'.repeat(200) } }], usage: { prompt_tokens: 0, completion_tokens: 0 } }) };
    await gw.post('/v1/chat/completions', req);
    const input = Math.ceil(Buffer.byteLength(req) / 4);
    expect(row()).toEqual({ usageKnown: false, input, output: 50, cacheRead: 0, cost: Math.ceil(input * 2.5 + 50 * 10) });
  });

  it('input 0 with cache reads is a count (a prompt read wholly from the cache): charged as reported', async () => {
    reply = { body: message({ input_tokens: 0, cache_read_input_tokens: 500, output_tokens: 5 }) };
    await gw.post('/v1/messages', anthropicBody());
    // 500 × 0.30 µ$ + 5 × 15 µ$
    expect(row()).toEqual({ usageKnown: true, input: 0, output: 5, cacheRead: 500, cost: 150 + 75 });
  });
});

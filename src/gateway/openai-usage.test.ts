import { describe, expect, it } from 'vitest';
import { OpenAiStreamReader } from './openai-usage.js';

const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

describe('OpenAiStreamReader: a Responses stream that ends in response.failed', () => {
  it('with usage: that usage is the call\'s, known (fresh-user finding: it was dropped for an estimate)', () => {
    const r = new OpenAiStreamReader();
    r.push(ev('response.created', { response: { id: 'r', model: 'gpt-4o', status: 'in_progress' } }));
    r.push(ev('response.failed', { response: { id: 'r', model: 'gpt-4o', status: 'failed', error: { code: 'server_error', message: 'x' }, usage: { input_tokens: 1234, input_tokens_details: { cached_tokens: 34 }, output_tokens: 50 } } }));
    const st = r.end();
    expect([st.complete, st.errored, st.invalidUsage]).toEqual([true, false, false]);
    expect(st.usage).toMatchObject({ inputTokens: 1200, cacheReadTokens: 34, outputTokens: 50 });
  });

  it('without usage (null or absent): errored, the usage unknown (the meter estimates it)', () => {
    for (const usage of [null, undefined]) {
      const r = new OpenAiStreamReader();
      r.push(ev('response.created', { response: { id: 'r', model: 'gpt-4o' } }));
      r.push(ev('response.failed', { response: { id: 'r', model: 'gpt-4o', status: 'failed', usage } }));
      const st = r.end();
      expect([st.complete, st.errored]).toEqual([false, true]);
    }
  });
});

describe('OpenAiStreamReader: a Chat Completions stream', () => {
  const chunk = (o: object) => `data: ${JSON.stringify(o)}\n\n`;
  it("its usage is known with or without the chunks' `object` (some OpenAI-compatible servers leave it out)", () => {
    for (const object of [{ object: 'chat.completion.chunk' }, {}]) {
      const r = new OpenAiStreamReader();
      r.push(chunk({ id: 'c', ...object, model: 'qwen', choices: [{ index: 0, delta: { content: 'hi' } }] }));
      r.push(chunk({ id: 'c', ...object, model: 'qwen', choices: [], usage: { prompt_tokens: 222, completion_tokens: 11 } }));
      r.push('data: [DONE]\n\n');
      const st = r.end();
      expect([st.complete, st.errored, st.model], JSON.stringify(object)).toEqual([true, false, 'qwen']);
      expect(st.usage).toMatchObject({ inputTokens: 222, outputTokens: 11 });
    }
  });

  it('text bytes for an estimate count content, refusals, reasoning (reasoning_content, reasoning) and tool arguments (fresh-tester finding: 20 reasoning deltas were estimated as 1 token)', () => {
    const r = new OpenAiStreamReader();
    const text = 'é'.repeat(27); // 54 bytes
    for (const delta of [{ reasoning_content: text }, { reasoning: text }, { content: text }, { refusal: text }, { tool_calls: [{ index: 0, function: { arguments: text } }] }, { role: 'assistant' }]) {
      r.push(chunk({ id: 'c', object: 'chat.completion.chunk', model: 'deepseek-r1', choices: [{ index: 0, delta }] }));
    }
    // cut before any usage: 5 × 54 bytes
    expect(r.state()).toMatchObject({ complete: false, textBytes: 270 });
  });

  it('a Responses stream counts reasoning text and refusal deltas too', () => {
    const r = new OpenAiStreamReader();
    r.push(ev('response.created', { response: { id: 'r', model: 'gpt-oss-120b' } }));
    for (const type of ['response.reasoning_text.delta', 'response.refusal.delta', 'response.output_text.delta']) r.push(ev(type, { delta: 'abcd' }));
    expect(r.state()).toMatchObject({ complete: false, textBytes: 12 });
  });
});

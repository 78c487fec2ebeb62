import { describe, expect, it } from 'vitest';
import { parseOpenAiRequest, withOutputLimit, withStreamUsage, type ChatRequest, type ResponsesRequest } from './openai-wire.js';

const chatOf = (raw: string) => {
  const p = parseOpenAiRequest('openai-chat', raw);
  if ('error' in p) throw new Error(p.error);
  return p.request as ChatRequest;
};

describe('withStreamUsage: the upstream is asked for a stream\'s usage', () => {
  it('no stream_options: the member is spliced in after `{`, every other byte as the client sent it', () => {
    // odd spacing, key order, a float written as 1.0 and an escaped char survive byte for byte
    const raw = ' \n{ "model":"gpt-4o" , "temperature": 1.0, "messages":[{"role":"user","content":"caf\\u00e9"}],"stream":true}';
    const out = withStreamUsage(Buffer.from(raw), chatOf(raw)).toString('utf8');
    expect(out).toBe(' \n{"stream_options":{"include_usage":true}, "model":"gpt-4o" , "temperature": 1.0, "messages":[{"role":"user","content":"caf\\u00e9"}],"stream":true}');
    expect(JSON.parse(out)).toEqual({ stream_options: { include_usage: true }, model: 'gpt-4o', temperature: 1, messages: [{ role: 'user', content: 'café' }], stream: true });
  });

  it('stream_options present (include_usage false, another option, or null): that member edited to include_usage true, every other byte as sent', () => {
    const raw = '{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":false,"other":1}}';
    expect(JSON.parse(withStreamUsage(Buffer.from(raw), chatOf(raw)).toString('utf8'))).toEqual({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: { include_usage: true, other: 1 } });
    const nul = '{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":null}';
    expect(JSON.parse(withStreamUsage(Buffer.from(nul), chatOf(nul)).toString('utf8')).stream_options).toEqual({ include_usage: true });
  });
});

// fresh-user finding: a body the gateway had to change was re-serialised from its parsed copy,
// and numbers JSON.parse cannot hold changed on the way (int64 seed 9007199254740993 → ...992)
describe('a body the gateway edits keeps every other byte as the client sent it', () => {
  const BIG = '9007199254740993'; // 2^53 + 1: a double cannot hold it
  it('Chat stream with stream_options: only include_usage is added; the seed, spacing and escapes are untouched', () => {
    const raw = `{"model":"gpt-4o", "seed": ${BIG},"max_tokens":10,"stream":true,"stream_options":{ "x": 1.50 },"messages":[{"role":"user","content":"caf\\u00e9"}]}`;
    expect(withStreamUsage(Buffer.from(raw), chatOf(raw)).toString('utf8')).toBe(
      `{"model":"gpt-4o", "seed": ${BIG},"max_tokens":10,"stream":true,"stream_options":{ "x": 1.50,"include_usage": true },"messages":[{"role":"user","content":"caf\\u00e9"}]}`,
    );
    const off = `{"model":"gpt-4o","seed":${BIG},"stream":true,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"x"}]}`;
    expect(withStreamUsage(Buffer.from(off), chatOf(off)).toString('utf8')).toBe(`{"model":"gpt-4o","seed":${BIG},"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`);
  });

  it('an output limit given as null: set in place; another limit given as null removed; the rest byte for byte', () => {
    const raw = `{"model":"gpt-4o","input":"hi","max_output_tokens":null,"x":${BIG}}`;
    const req = parseOpenAiRequest('openai-responses', raw);
    if ('error' in req) throw new Error(req.error);
    expect(withOutputLimit(Buffer.from(raw), req.request as ResponsesRequest, 'max_output_tokens', 4096).toString('utf8')).toBe(`{"model":"gpt-4o","input":"hi","max_output_tokens":4096,"x":${BIG}}`);
    const chat = `{"model":"gpt-4o","seed":${BIG},"max_tokens":null,"messages":[{"role":"user","content":"x"}]}`;
    const out = withOutputLimit(Buffer.from(chat), chatOf(chat), 'max_completion_tokens', 100).toString('utf8');
    expect(out).toBe(`{"model":"gpt-4o","seed":${BIG},"messages":[{"role":"user","content":"x"}],"max_completion_tokens": 100}`);
  });
});

describe('a field of several shapes given none of them: the error names the shapes and what came', () => {
  // fresh-user finding: a Responses body without input got `input: Invalid input`
  it('Responses input missing, a number, or a list of numbers', () => {
    expect(parseOpenAiRequest('openai-responses', '{"model":"gpt-4o","max_output_tokens":10}')).toEqual({ error: 'input: Field required (expected string or array)', param: 'input' });
    expect(parseOpenAiRequest('openai-responses', '{"model":"gpt-4o","input":42}')).toEqual({ error: 'input: Invalid input: expected string or array, received number', param: 'input' });
    expect(parseOpenAiRequest('openai-responses', '{"model":"gpt-4o","input":["hi"]}')).toEqual({ error: 'input.0: Invalid input: expected object, received string', param: 'input.0' });
  });
});

import { describe, expect, it } from 'vitest';
import { parseOpenAiRequest, withStreamUsage, type ChatRequest } from './openai-wire.js';

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

  it('stream_options present (include_usage false, another option, or null): re-serialised with include_usage true, the rest kept', () => {
    const raw = '{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":false,"other":1}}';
    expect(JSON.parse(withStreamUsage(Buffer.from(raw), chatOf(raw)).toString('utf8'))).toEqual({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true, stream_options: { include_usage: true, other: 1 } });
    const nul = '{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":null}';
    expect(JSON.parse(withStreamUsage(Buffer.from(nul), chatOf(nul)).toString('utf8')).stream_options).toEqual({ include_usage: true });
  });
});

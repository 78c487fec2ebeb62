/**
 * A field the gateway reads given twice in a model-call body (repeated-members.ts): refused 400
 * in the wire format's shape, naming it, the upstream sees nothing, the call is recorded as
 * refused — a client cannot have Haiku with 10 tokens reserved and charged while an upstream
 * reading the first copy serves Opus with 60,000 (fresh-tester finding). Fields the gateway does
 * not read, and names repeated only inside nested objects, pass as sent.
 */
import { describe, expect, it } from 'vitest';
import { repeatedMember, WATCHED_MEMBERS } from './repeated-members.js';
import { forFile, startGateway } from './test-server.js';
import { RecordingStore } from './test-stores.js';
import { replyByWireFormat } from './test-upstream.js';

const MESSAGES = WATCHED_MEMBERS['anthropic-messages'];
/** repeatedMember of `raw`, which must be valid JSON (as it is when the gateway asks). */
const check = (raw: string, watched: readonly string[]) => {
  JSON.parse(raw);
  return repeatedMember(raw, watched);
};

describe('repeatedMember', () => {
  it('finds a watched top-level member given twice, by its decoded name', () => {
    expect(check('{"model":"a","max_tokens":5,"model":"b"}', MESSAGES)).toBe('model');
    expect(check('{"model":"a","\\u006dodel":"b"}', MESSAGES)).toBe('model');
    expect(check('{ "max_tokens" : 1 ,\n "stream":true, "max_tokens":2}', MESSAGES)).toBe('max_tokens');
    expect(check('{"model":"a","messages":[],"tools":[],"tools":[{"name":"x"}]}', MESSAGES)).toBe('tools');
  });

  it("finds a member given twice in a tool, an MCP server or stream_options (what the call is reserved and charged for), by its path", () => {
    expect(check('{"model":"a","tools":[{"type":"web_search_20250305","name":"web_search","max_uses":50,"max_uses":1}],"messages":[]}', MESSAGES)).toBe('tools[0].max_uses');
    expect(check('{"model":"a","input":"hi","tools":[{"type":"function","name":"f"}, {"type":"image_generation","quality":"high","\\u0071uality":"low"}]}', WATCHED_MEMBERS['openai-responses'])).toBe('tools[1].quality');
    expect(check('{"model":"a","messages":[],"mcp_servers":[{"type":"url","url":"https://a","url":"https://b","name":"m"}]}', MESSAGES)).toBe('mcp_servers[0].url');
    expect(check('{"model":"a","messages":[],"stream":true,"stream_options":{"include_usage":false,"include_usage":true}}', WATCHED_MEMBERS['openai-chat'])).toBe('stream_options.include_usage');
  });

  it('leaves alone: one of each, nested repeats, a name as a value or inside a string, unwatched repeats', () => {
    expect(check('{"model":"a","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}', MESSAGES)).toBeNull();
    // a tool whose schema has its own "model" and "max_tokens" properties (Claude Code's Task tool has a model)
    expect(check('{"model":"a","tools":[{"name":"t","input_schema":{"properties":{"model":{"type":"string"},"max_tokens":{}}}}],"messages":[]}', MESSAGES)).toBeNull();
    // a string value "model", and the text \"model\" inside a string (an escaped quote before and after)
    expect(check('{"model":"a","metadata":{"k":"model"},"messages":[{"role":"user","content":"say \\"model\\", \\\\\\"x"}]}', MESSAGES)).toBeNull();
    expect(check('{"model":"a","temperature":1,"temperature":0}', MESSAGES)).toBeNull();
    // an escaped backslash before "u0061" is text, not an escape: no key there
    expect(check('{"model":"a","messages":[{"role":"user","content":"\\\\u0061 \\\\u006dodel"}]}', MESSAGES)).toBeNull();
    // not an object: nothing to repeat
    expect(check('["model","model"]', MESSAGES)).toBeNull();
  });
});

const gw = forFile(() =>
  startGateway({
    job: { token: 'flj_repeated_0123456789abcdefghijkl', id: 4, budgetMicros: 1_000_000_000 },
    openai: 'openai',
    config: { modelProviders: [{ pattern: 'claude-*', provider: 'anthropic' }, { pattern: '*', provider: 'openai' }] },
    upstream: replyByWireFormat,
    store: new RecordingStore(),
  }),
);

describe('the gateway refuses a body that gives a field it reads twice', () => {
  it('Messages: two models and two limits (the tester\'s body): 400 invalid_request_error naming model; nothing upstream, nothing held, recorded refused', async () => {
    const res = await gw.post('/v1/messages', '{"model":"claude-opus-4-1","max_tokens":60000,"messages":[{"role":"user","content":"hi"}],"model":"claude-haiku-4-5","max_tokens":10}');
    expect([res.status, await res.json()]).toEqual([400, { type: 'error', error: { type: 'invalid_request_error', message: 'model: given twice in the request body; give each field once' } }]);
    expect(gw.up.seen).toEqual([]);
    expect(gw.store.held).toEqual([]);
    // the body names no one model: recorded as unknown (it named the second copy, which JSON.parse keeps)
    expect(gw.store.calls.at(-1)).toMatchObject({ httpStatus: 400, refused: 'invalid_request', costMicros: 0, model: 'unknown' });
    await gw.post('/v1/chat/completions', '{"model":"gpt-4o","\\u006dodel":"gpt-5","messages":[]}');
    expect(gw.store.calls.at(-1)).toMatchObject({ httpStatus: 400, refused: 'invalid_request', model: 'unknown' });
  });

  it('count_tokens too: two message lists', async () => {
    const res = await gw.post('/v1/messages/count_tokens', '{"model":"claude-haiku-4-5","messages":[],"messages":[{"role":"user","content":"hi"}]}');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe('messages: given twice in the request body; give each field once');
    expect(gw.up.seen).toEqual([]);
  });

  it('Chat Completions and Responses: the OpenAI shape, param naming the field', async () => {
    const chat = await gw.post('/v1/chat/completions', '{"model":"gpt-4o","max_completion_tokens":900000,"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":10}');
    expect([chat.status, await chat.json()]).toEqual([400, { error: { message: 'max_completion_tokens: given twice in the request body; give each field once', type: 'invalid_request_error', param: 'max_completion_tokens', code: null } }]);
    const responses = await gw.post('/v1/responses', '{"model":"gpt-4o","input":"hi","stream":false,"\\u0073tream":true}');
    expect(responses.status).toBe(400);
    expect(((await responses.json()) as { error: { param: string } }).error.param).toBe('stream');
    expect(gw.up.seen).toEqual([]);
    expect(gw.store.held).toEqual([]);
  });

  it('a tool\'s member given twice (web search max_uses 50 then 1: one search reserved, 50 possible) and stream_options.include_usage: 400 naming the path', async () => {
    const res = await gw.post('/v1/messages', '{"model":"claude-haiku-4-5","max_tokens":10,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":50,"max_uses":1}],"messages":[{"role":"user","content":"hi"}]}');
    expect([res.status, await res.json()]).toEqual([400, { type: 'error', error: { type: 'invalid_request_error', message: 'tools[0].max_uses: given twice in the request body; give each field once' } }]);
    const chat = await gw.post('/v1/chat/completions', '{"model":"gpt-4o","max_tokens":10,"stream":true,"stream_options":{"include_usage":false,"include_usage":true},"messages":[{"role":"user","content":"hi"}]}');
    expect([chat.status, await chat.json()]).toEqual([400, { error: { message: 'stream_options.include_usage: given twice in the request body; give each field once', type: 'invalid_request_error', param: 'stream_options.include_usage', code: null } }]);
    expect(gw.up.seen).toEqual([]);
    expect(gw.store.held).toEqual([]);
  });

  it('a repeated field the gateway does not read, and nested repeats, go upstream as sent', async () => {
    const text = '{"model":"claude-haiku-4-5","max_tokens":5,"temperature":1,"temperature":0,"tools":[{"name":"Task","input_schema":{"type":"object","properties":{"model":{"type":"string"}}}}],"messages":[{"role":"user","content":"hi"}]}';
    const res = await gw.post('/v1/messages', text);
    expect(res.status, await res.clone().text()).toBe(200);
    await res.arrayBuffer();
    expect(gw.up.seen.at(-1)!.body).toBe(text);
  });
});

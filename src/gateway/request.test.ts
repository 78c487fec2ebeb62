import { describe, expect, it } from 'vitest';
import { MessagesRequest, parseMessagesRequest } from './request.js';

describe('parseMessagesRequest', () => {
  // Each body with whether the Messages schema accepts it (worked out from the schema's rules:
  // model a non-empty string without NUL, max_tokens an integer ≥ 1 (safe), messages an array of objects with a string role and a content key, stream boolean,
  // max_tokens a number; anything else passes through).
  const cases: Array<[string, boolean]> = [
    ['{"model":"m","messages":[]}', true],
    ['{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi","x":1}],"extra":{"a":[1]}}', true],
    ['{"model":"m","messages":[{"role":"user"}]}', false],
    ['{"model":"m","messages":[{"role":"user","content":null}]}', true],
    ['{"model":"","messages":[]}', false],
    ['{"model":3,"messages":[]}', false],
    ['{"messages":[]}', false],
    ['{"model":"m"}', false],
    ['{"model":"m","messages":{}}', false],
    ['{"model":"m","messages":[null]}', false],
    ['{"model":"m","messages":[[]]}', false],
    ['{"model":"m","messages":[{"content":"x"}]}', false],
    ['{"model":"m","messages":[{"role":1}]}', false],
    ['{"model":"m","messages":[],"stream":"yes"}', false],
    ['{"model":"m","messages":[],"stream":null}', false],
    ['{"model":"m","messages":[],"max_tokens":"5"}', false],
    ['{"model":"m","messages":[],"max_tokens":1}', true],
    ['{"model":"m","messages":[],"max_tokens":0}', false],
    ['{"model":"m","messages":[],"max_tokens":-1000000000000}', false],
    ['{"model":"m","messages":[],"max_tokens":2.5}', false],
    ['{"model":"m","messages":[],"max_tokens":1e300}', false],
    ['{"model":"m","messages":[],"max_tokens":9007199254740993}', false],
    ['{"model":"m\\u0000","messages":[]}', false],
    ['[]', false],
    ['null', false],
    ['"x"', false],
  ];
  it.each(cases)('%s → accepted: %s (the same verdict as the zod schema)', (body, ok) => {
    const got = parseMessagesRequest(body);
    expect('request' in got).toBe(ok);
    expect(MessagesRequest.safeParse(JSON.parse(body)).success).toBe(ok);
    if ('request' in got) expect(got.request).toEqual(JSON.parse(body));
  });

  it('names the bad field, and says when the body is not JSON', () => {
    expect(parseMessagesRequest('{"model":"m","messages":[{"role":1}]}')).toEqual({ error: expect.stringMatching(/^messages\.0\.role: /) });
    expect(parseMessagesRequest('{"model":"m","messages":[],"stream":"yes"}')).toEqual({ error: expect.stringMatching(/^stream: /) });
    expect(parseMessagesRequest('{nope')).toEqual({ error: 'request body is not valid JSON' });
    // what can be said without echoing the body: empty, or a byte order mark before valid JSON (RFC 8259 §8.1)
    expect(parseMessagesRequest('')).toEqual({ error: 'request body is empty: a JSON object is needed' });
    expect(parseMessagesRequest(' \n')).toEqual({ error: 'request body is empty: a JSON object is needed' });
    expect(parseMessagesRequest('\uFEFF{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}')).toEqual({
      error: 'request body is not valid JSON: it starts with a byte order mark (U+FEFF), which JSON text must not (RFC 8259 §8.1)',
    });
    expect(parseMessagesRequest('{"model":"m","messages":[],"max_tokens":1e300}')).toEqual({ error: expect.stringMatching(/^max_tokens: /) });
    expect(parseMessagesRequest('{"model":"m\\u0000","messages":[]}')).toEqual({ error: 'model: must not contain NUL' });
    // a model name over 256 characters is refused (stored in every ledger row, written in logs); 256 is fine
    expect(parseMessagesRequest(JSON.stringify({ model: 'c'.repeat(257), messages: [] }))).toEqual({ error: 'model: must be at most 256 characters' });
    expect(parseMessagesRequest('{"model":"","messages":[]}')).toEqual({ error: 'model: must not be empty' });
    // no provider serves such a name; priced by the longest listed prefix it would have been
    // charged as another model (fresh-user finding: "claude-sonnet-4-5 " at claude-sonnet-4's rates)
    for (const m of ['claude-sonnet-4-5 ', ' claude-sonnet-4-5', 'claude-sonnet-4-5\\t', 'claude-sonnet-4-5\\n', '\u00a0m', 'm\u2003']) {
      expect(parseMessagesRequest(`{"model":"${m}","messages":[]}`), m).toEqual({ error: m.includes('\\t') || m.includes('\\n') ? 'model: must not contain control characters' : 'model: must not begin or end with whitespace' });
    }
    expect(parseMessagesRequest('{"model":"a\\u001bb","messages":[]}')).toEqual({ error: 'model: must not contain control characters' });
    expect(parseMessagesRequest('{"model":"a\\u007fb","messages":[]}')).toEqual({ error: 'model: must not contain control characters' });
    for (const c1 of ['\\u0080', '\\u0085', '\\u009f']) expect(parseMessagesRequest(`{"model":"claude${c1}","messages":[]}`), c1).toEqual({ error: 'model: must not contain control characters' });
    for (const bidi of ['\\u202e', '\\u200f', '\\u2066']) expect(parseMessagesRequest(`{"model":"claude-sonnet-4-5${bidi}","messages":[]}`), bidi).toEqual({ error: 'model: must not contain bidirectional formatting characters (U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069)' });
    expect(parseMessagesRequest('{"model":"caf\\u00e9","messages":[]}')).toMatchObject({ request: { model: 'café' } });
    // a space inside a name is a name (a local server may call its model so)
    expect(parseMessagesRequest('{"model":"my model","messages":[]}')).toMatchObject({ request: { model: 'my model' } });
    expect(parseMessagesRequest(JSON.stringify({ model: 'c'.repeat(256), messages: [] }))).toMatchObject({ request: { model: 'c'.repeat(256) } });
  });
});

describe('a missing field of a model call body is said as Anthropic says one', () => {
  it('no model: "model: Field required (expected string)", worded as max_tokens\'s "Field required" (fresh tester: zod\'s "Invalid input ... received undefined" read as another rule)', () => {
    expect(parseMessagesRequest('{"max_tokens":10,"messages":[]}')).toEqual({ error: 'model: Field required (expected string)' });
    expect(parseMessagesRequest('{"model":"m","max_tokens":10}')).toEqual({ error: 'messages: Field required (expected array)' });
    // a field of the wrong type keeps zod's words
    expect(parseMessagesRequest('{"model":5,"max_tokens":10,"messages":[]}')).toEqual({ error: 'model: Invalid input: expected string, received number' });
  });
});

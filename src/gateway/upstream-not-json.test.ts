/**
 * An upstream error reply whose body is not JSON (a proxy's HTML page, a line of text, nothing)
 * reaches the client as the wire format's own error with the same status, naming the provider,
 * status, content type and the start of the text, the retry advice kept; recorded as any upstream
 * error (status, no tokens, $0). It reached the client as it came (fresh-tester finding). A JSON
 * error body, whatever its content type says, still passes as sent. Gateway over node:http,
 * memory store, no retries.
 */
import { describe, expect, it } from 'vitest';
import { snippet } from './upstream-not-json.js';
import { startGateway } from './test-server.js';

const TOKEN = 'flj_notjson_0123456789abcdefghijk';
const MESSAGES = { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] };
const CHAT = { model: 'gpt-4o', max_tokens: 100, messages: [{ role: 'user', content: 'x' }] };
const NGINX = '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';

describe('an upstream error whose body is not JSON', () => {
  it("Anthropic format: the status kept, Anthropic's error shape, the text quoted without its tags", async () => {
    const gw = await startGateway({ job: { token: TOKEN, id: 4, budgetMicros: 5_000_000 } });
    try {
      gw.setReply({ status: 502, headers: { 'content-type': 'text/html', 'retry-after': '3' }, body: NGINX });
      const res = await gw.post('/v1/messages', MESSAGES);
      expect(res.status).toBe(502);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(res.headers.get('retry-after')).toBe('3');
      expect(await res.json()).toEqual({
        type: 'error',
        error: { type: 'api_error', message: 'the model provider (anthropic) answered HTTP 502 with text/html, not the JSON error its API sends: "502 Bad Gateway 502 Bad Gateway nginx" (a proxy or gateway in front of it?)' },
      });
      await expect.poll(() => gw.store.calls.length).toBe(1);
      expect(gw.store.calls[0]).toMatchObject({ httpStatus: 502, costMicros: 0, inputTokens: 0, outputTokens: 0 });

      gw.setReply({ status: 529, headers: { 'content-type': 'text/plain' }, body: 'upstream exploded' });
      const overloaded = await gw.post('/v1/messages', { ...MESSAGES, stream: true });
      expect([overloaded.status, await overloaded.json()]).toEqual([
        529,
        { type: 'error', error: { type: 'overloaded_error', message: 'the model provider (anthropic) answered HTTP 529 with text/plain, not the JSON error its API sends: "upstream exploded" (a proxy or gateway in front of it?)' } },
      ]);

      gw.setReply({ status: 503, headers: {}, body: '' });
      const empty = await gw.post('/v1/messages/count_tokens', MESSAGES);
      expect([empty.status, ((await empty.json()) as { error: { message: string } }).error.message]).toEqual([503, 'the model provider (anthropic) answered HTTP 503 with no body (no content type), not the JSON error its API sends (a proxy or gateway in front of it?)']);
    } finally {
      await gw.close();
    }
  });

  it("OpenAI format: OpenAI's shape, code upstream_not_json; a JSON error sent as text/plain passes as sent", async () => {
    const gw = await startGateway({ openai: 'openai-compatible', job: { token: TOKEN, id: 4, budgetMicros: 5_000_000 } });
    try {
      gw.setReply({ status: 500, headers: { 'content-type': 'text/plain' }, body: 'Internal Server Error' });
      const res = await gw.post('/v1/chat/completions', CHAT);
      expect([res.status, await res.json()]).toEqual([
        500,
        { error: { message: 'the model provider (openai-compatible) answered HTTP 500 with text/plain, not the JSON error its API sends: "Internal Server Error" (a proxy or gateway in front of it?)', type: 'server_error', param: null, code: 'upstream_not_json' } },
      ]);
      // a base URL without its /v1: the server's own 404 page, and the setting to check
      gw.setReply({ status: 404, headers: { 'content-type': 'text/html; charset=utf-8' }, body: '<!DOCTYPE html><html><body><pre>Cannot POST /chat/completions</pre></body></html>' });
      const wrongPath = await gw.post('/v1/chat/completions', CHAT);
      expect([wrongPath.status, ((await wrongPath.json()) as { error: { message: string; type: string } }).error]).toMatchObject([
        404,
        { type: 'invalid_request_error', message: 'the model provider (openai-compatible) answered HTTP 404 with text/html; charset=utf-8, not the JSON error its API sends: "Cannot POST /chat/completions" (a proxy or gateway in front of it? or a wrong path: an admin should check FLOTILLA_OPENAI_COMPATIBLE_URL)' },
      ]);
      const json = '{"error":{"message":"model is loading","type":"unavailable"}}';
      gw.setReply({ status: 503, headers: { 'content-type': 'text/plain' }, body: json });
      const passed = await gw.post('/v1/chat/completions', CHAT);
      expect([passed.status, await passed.text()]).toEqual([503, json]);
    } finally {
      await gw.close();
    }
  });

  it('a key the upstream echoed is never quoted in part: the quote ends between words, and the whole reply is masked (fresh-tester finding)', async () => {
    const key = 'sk-ant-key2-BBBBBBBBBBBB';
    const gw = await startGateway({ config: { anthropicApiKey: `sk-ant-key1-AAAAAAAAAAAA,${key}` }, job: { token: TOKEN, id: 4, budgetMicros: 5_000_000 } });
    try {
      // every place the 200-character quote could end: before the key, inside it, after it
      for (let pad = 170; pad <= 200; pad++) {
        gw.setReply({ status: 502, headers: { 'content-type': 'text/plain' }, body: `${'x'.repeat(pad)} ${key} trailing` });
        const text = await (await gw.post('/v1/messages', MESSAGES)).text();
        // no 8 characters of the key in a row (MIN_MASKED_KEY_LENGTH), masked or cut
        for (let i = 0; i + 8 <= key.length; i++) expect(text, `pad ${pad}`).not.toContain(key.slice(i, i + 8));
      }
      // a key with no space before it, cut: the one long word is left out
      gw.setReply({ status: 502, headers: { 'content-type': 'text/plain' }, body: `${'x'.repeat(177)}${key} trailing` });
      expect(((await (await gw.post('/v1/messages', MESSAGES)).json()) as { error: { message: string } }).error.message).toBe(
        'the model provider (anthropic) answered HTTP 502 with text/plain, not the JSON error its API sends: "…" (a proxy or gateway in front of it?)',
      );
    } finally {
      await gw.close();
    }
  });

  it('the quote: whole words up to 200 characters, then " …"', () => {
    const words = Array.from({ length: 30 }, (_, i) => `word${String(i).padStart(2, '0')}`).join(' '); // 30 × 6 + 29 = 209 characters
    // 28 words are 28 × 6 + 27 = 195 characters; the 29th would end at 202
    expect(snippet(words)).toBe(`${words.slice(0, 195)} …`);
    expect(snippet('a'.repeat(200))).toBe('a'.repeat(200));
    expect(snippet(`${'a'.repeat(200)} b`)).toBe(`${'a'.repeat(200)} …`);
    expect(snippet('a'.repeat(201))).toBe('…');
  });
});

/**
 * Request bodies sent with `content-encoding` (node-adapter.ts + body-encoding.ts): gzip,
 * deflate and br are decoded before the route reads them, and the upstream gets the plain
 * JSON without the encoding header; the decoded size is bounded by the body limit, so a
 * decompression bomb gets 413 and the upstream sees nothing; an unknown encoding gets 415
 * naming it. Real HTTP in front (the node path the control plane serves), a fake upstream behind.
 */
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { forFile, startGateway } from './test-server.js';

const LIMIT = 64 * 1024;
const MESSAGE = { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn', usage: { input_tokens: 100, output_tokens: 20 } };
const CHAT = { id: 'c', object: 'chat.completion', model: 'gpt-4o', choices: [], usage: { prompt_tokens: 10, completion_tokens: 2 } };
const gw = forFile(() =>
  startGateway({
    upstream: (r) => ({ body: JSON.stringify(r.url.startsWith('/v1/messages') ? MESSAGE : CHAT) }),
    job: { token: 'flj_encoding_0123456789abcdefghijk', id: 8, budgetMicros: 5_000_000 },
    openai: 'openai-compatible',
    config: { maxRequestBytes: LIMIT },
  }),
);

const post = (path: string, body: Buffer, encoding: string) => gw.post(path, body, { headers: { 'content-encoding': encoding } });
const messages = { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'fix the failing test, please' }] };

describe('content-encoding of request bodies', () => {
  it('gzip: decoded; the upstream gets the same JSON, without content-encoding; metered from its reply', async () => {
    const res = await post('/v1/messages', gzipSync(JSON.stringify(messages)), 'gzip');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(MESSAGE);
    expect(gw.up.seen).toHaveLength(1);
    expect(JSON.parse(gw.up.seen[0]!.body)).toEqual(messages);
    expect(gw.up.seen[0]!.headers['content-encoding']).toBeUndefined();
    // 100 × 3 + 20 × 15 µ$ (claude-sonnet-4-5)
    expect(gw.store.calls.map((c) => [c.httpStatus, c.usageKnown, c.costMicros])).toEqual([[200, true, 600]]);
  });

  it('br and deflate (OpenAI routes too): decoded', async () => {
    const chat = { model: 'gpt-4o', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] };
    const a = await post('/v1/chat/completions', brotliCompressSync(JSON.stringify(chat)), 'br');
    expect(a.status).toBe(200);
    const b = await post('/v1/messages', deflateSync(JSON.stringify(messages)), 'deflate');
    expect(b.status).toBe(200);
    expect(gw.up.seen.map((s) => JSON.parse(s.body))).toEqual([chat, messages]);
  });

  it('a decompression bomb (a small gzip body decoding past the limit): 413 in the wire format, the upstream sees nothing', async () => {
    const bomb = gzipSync(JSON.stringify({ ...messages, messages: [{ role: 'user', content: ' '.repeat(10 * 1024 * 1024) }] }));
    expect(bomb.byteLength).toBeLessThan(LIMIT);
    const a = await post('/v1/messages', bomb, 'gzip');
    expect(a.status).toBe(413);
    expect(a.headers.get('x-should-retry')).toBe('false');
    expect(((await a.json()) as { error: { type: string; message: string } }).error).toEqual({ type: 'request_too_large', message: `request body (content-encoding "gzip") decodes to more than ${LIMIT} bytes; the limit is ${LIMIT}` });
    const b = await post('/v1/responses', bomb, 'gzip');
    expect(b.status).toBe(413);
    expect(((await b.json()) as { error: { code: string } }).error.code).toBe('request_too_large');
    expect(gw.up.seen).toHaveLength(0);
  });

  it('an unknown encoding: 415 naming it; a corrupt gzip body: 400; the upstream sees neither', async () => {
    const a = await post('/v1/messages', Buffer.from(JSON.stringify(messages)), 'zstd');
    expect(a.status).toBe(415);
    expect(((await a.json()) as { error: { type: string; message: string } }).error).toEqual({
      type: 'invalid_request_error',
      message: 'content-encoding "zstd" is not supported: send the body uncompressed, or encoded as gzip, deflate or br',
    });
    const b = await post('/v1/chat/completions', Buffer.from(JSON.stringify(messages)), 'gzip');
    expect(b.status).toBe(400);
    expect(((await b.json()) as { error: { code: string; type: string } }).error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_content_encoding' });
    expect(gw.up.seen).toHaveLength(0);
  });

  it('identity is the body as sent', async () => {
    const res = await post('/v1/messages', Buffer.from(JSON.stringify(messages)), 'identity');
    expect(res.status).toBe(200);
    expect(JSON.parse(gw.up.seen[0]!.body)).toEqual(messages);
  });
});

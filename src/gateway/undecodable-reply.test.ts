/**
 * A reply body the gateway cannot decode is still in the ledger (issue 3; DESIGN: unknown usage
 * is never recorded as $0): recorded with usage unknown and charged an estimate marked as one —
 * input ⌈request bytes / 4⌉, output ⌈reply bytes / 4⌉ up to the output limit, at least 1
 * (usage.ts estimateUsage) —, never $0, never missing, and a served call is never sent again:
 * - a 200 non-streamed reply that is not JSON (passed on as sent);
 * - a broken SSE stream (garbage events, the connection cut mid-stream);
 * - a 200 whose gzip body does not decode, or whose connection resets mid-body: 502 in the wire
 *   format with `x-should-retry: false`, the upstream called once (upstream-broken.ts).
 * Anthropic and OpenAI wire formats, real HTTP, a raw node upstream.
 * Prices: claude-sonnet-4-5 3 / 15 µ$ per input / output token; gpt-4o 2.5 / 10.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { forFile, startGateway } from './test-server.js';
import { firstMessage, type FakeAnswer } from './test-upstream.js';

/** Upstream calls by what the request's first message says. */
const seen = new Map<string, number>();

/** The reply bodies, by the request's first message. */
const NOT_JSON = '{"id":"msg_1","type":"message","usage":{"input_tokens":12,"output_tok'; // cut: 69 bytes
const SSE_START = 'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}\n\n';
const ZSTD = '(zstd frame the gateway cannot unpack).'; // 40 bytes
const GARBAGE = 'event: content_block_delta\ndata: {not json at all\n\ndata: \u0000\u0001\n\n';

/** The upstream's answer to a request whose first message is `what`. */
function answer(what: string): FakeAnswer {
  seen.set(what, (seen.get(what) ?? 0) + 1);
  if (what === 'not-json') return { body: NOT_JSON };
  if (what === 'html') return { headers: { 'content-type': 'text/html' }, body: '<html>upstream proxy page</html>' }; // 32 bytes
  if (what === 'zstd') return { headers: { 'content-type': 'application/json', 'content-encoding': 'zstd' }, body: ZSTD };
  if (what === 'bad-gzip') return { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: 'this is not gzip data at all, 40 bytes..' };
  if (what === 'sse-garbage') return { headers: { 'content-type': 'text/event-stream' }, body: GARBAGE.repeat(3) }; // ends without message_stop or usage
  if (what === 'reset') {
    // 2,000 bytes promised, 400 sent, then the connection is cut
    return (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2000' });
      res.write('x'.repeat(400));
      setTimeout(() => res.socket?.destroy(), 50);
    };
  }
  // 'sse-cut': a start, garbage, then the connection dies mid-stream
  return (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(SSE_START);
    res.write(GARBAGE);
    setTimeout(() => res.socket?.destroy(), 50);
  };
}

const gw = forFile(() =>
  startGateway({ upstream: (r) => answer(firstMessage(r)), job: { token: 'flj_undecodable_0123456789abcdefgh', id: 6, budgetMicros: 50_000_000 }, openai: 'openai', config: { retry: { retries: 2, baseMs: 1 } } }),
);
beforeEach(() => seen.clear());

/** Posts a call whose first message is `what`; returns the reply, its text (or the error it broke with) and the request's byte count. */
async function call(api: 'anthropic' | 'chat', what: string, stream = false) {
  const body = JSON.stringify(api === 'anthropic' ? { model: 'claude-sonnet-4-5', max_tokens: 100, stream, messages: [{ role: 'user', content: what }] } : { model: 'gpt-4o', max_completion_tokens: 100, stream, messages: [{ role: 'user', content: what }] });
  const res = await gw.post(api === 'anthropic' ? '/v1/messages' : '/v1/chat/completions', body);
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    text = `(broke: ${(err as Error).message})`;
  }
  return { res, text, bytes: Buffer.byteLength(body) };
}
const row = async () => {
  await expect.poll(() => gw.store.calls.length, { timeout: 2000, interval: 10 }).toBe(1);
  return gw.store.calls[0]!;
};

describe('a 200 non-streamed reply that is not JSON', () => {
  it('Anthropic: passed on as sent; recorded, usage unknown, charged the estimate (never $0)', async () => {
    const { res, text, bytes } = await call('anthropic', 'not-json');
    expect([res.status, text]).toEqual([200, NOT_JSON]);
    // input ⌈bytes/4⌉ × 3 µ$; output ⌈69/4⌉ = 18 tokens × 15 µ$ = 270 µ$
    const input = Math.ceil(bytes / 4);
    expect(await row()).toMatchObject({ httpStatus: 200, usageKnown: false, inputTokens: input, outputTokens: 18, costMicros: input * 3 + 270 });
    expect(seen.get('not-json')).toBe(1);
  });

  it('a content-encoding the gateway does not decode (zstd): passed on with its header and bytes, not as plain text; charged the estimate', async () => {
    const { res, text, bytes } = await call('anthropic', 'zstd');
    expect([res.status, res.headers.get('content-encoding'), text]).toEqual([200, 'zstd', ZSTD]);
    // input ⌈bytes/4⌉ × 3 µ$; output ⌈40/4⌉ = 10 tokens × 15 µ$ = 150 µ$
    const input = Math.ceil(bytes / 4);
    expect(await row()).toMatchObject({ httpStatus: 200, usageKnown: false, inputTokens: input, outputTokens: 10, costMicros: input * 3 + 150 });
  });

  it('OpenAI Chat, an HTML page with status 200: recorded, usage unknown, charged the estimate', async () => {
    const { res, bytes } = await call('chat', 'html');
    expect(res.status).toBe(200);
    // input ⌈bytes/4⌉ × 2.5 µ$ (rounded half up once); output ⌈32/4⌉ = 8 tokens × 10 µ$ = 80 µ$
    const input = Math.ceil(bytes / 4);
    expect(await row()).toMatchObject({ httpStatus: 200, usageKnown: false, inputTokens: input, outputTokens: 8, costMicros: Math.round(input * 2.5 + 80) });
  });
});

describe('a broken SSE stream', () => {
  it('Anthropic: garbage events and no message_stop: recorded with usage unknown, charged the estimate', async () => {
    const { res, bytes } = await call('anthropic', 'sse-garbage', true);
    expect(res.status).toBe(200);
    // no usage and no text deltas seen: input ⌈bytes/4⌉, output 1 token (15 µ$)
    const input = Math.ceil(bytes / 4);
    expect(await row()).toMatchObject({ httpStatus: 200, usageKnown: false, inputTokens: input, outputTokens: 1, costMicros: input * 3 + 15 });
  });

  it('Anthropic: cut mid-stream after garbage: recorded with usage unknown, charged the estimate from message_start', async () => {
    const { bytes } = await call('anthropic', 'sse-cut', true);
    // message_start said 5 input, 1 output: its input is the provider's count, charged as said
    // (not the larger guess by size, ⌈bytes/4⌉); output 1 token (15 µ$)
    const input = 5;
    expect(Math.ceil(bytes / 4)).toBeGreaterThan(input);
    expect(await row()).toMatchObject({ httpStatus: 200, usageKnown: false, inputTokens: input, outputTokens: 1, costMicros: input * 3 + 15 });
    expect(seen.get('sse-cut')).toBe(1);
  });

  it('OpenAI Chat: garbage and no [DONE]: recorded with usage unknown, charged the estimate', async () => {
    const { bytes } = await call('chat', 'sse-garbage', true);
    const input = Math.ceil(bytes / 4);
    expect(await row()).toMatchObject({ usageKnown: false, inputTokens: input, outputTokens: 1, costMicros: Math.round(input * 2.5 + 10) });
  });
});

describe('a 200 whose body breaks or does not decode', () => {
  it('Anthropic, gzip that does not decode: 502 api_error naming it, not retried (one upstream call), charged the estimate', async () => {
    const { res, text, bytes } = await call('anthropic', 'bad-gzip');
    expect(res.status).toBe(502);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const err = JSON.parse(text) as { type: string; error: { type: string; message: string } };
    expect(err).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(err.error.message).toMatch(/^the model provider's reply \(HTTP 200\) could not be read: its gzip body does not decode/);
    expect(seen.get('bad-gzip')).toBe(1);
    // input ⌈bytes/4⌉ × 3 µ$; output ⌈40 raw bytes / 4⌉ = 10 tokens × 15 µ$ = 150 µ$
    const input = Math.ceil(bytes / 4);
    expect(await row()).toMatchObject({ httpStatus: 502, usageKnown: false, inputTokens: input, outputTokens: 10, costMicros: input * 3 + 150 });
  });

  it('OpenAI Chat, connection reset mid-body: 502 server_error, not retried, charged the estimate', async () => {
    const { res, text, bytes } = await call('chat', 'reset');
    expect(res.status).toBe(502);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(JSON.parse(text)).toMatchObject({ error: { type: 'server_error' } });
    expect(seen.get('reset')).toBe(1);
    // output ⌈400 bytes received / 4⌉ = 100 tokens, the request's limit (100) × 10 µ$ = 1,000 µ$
    const input = Math.ceil(bytes / 4);
    expect(await row()).toMatchObject({ httpStatus: 502, usageKnown: false, inputTokens: input, outputTokens: 100, costMicros: Math.round(input * 2.5 + 1_000) });
  });
});

import { describe, expect, it } from 'vitest';
import { deltaTextBytes, estimateUsage, StreamUsageReader, usageFromMessage } from './usage.js';
import { OpenAiStreamReader } from './openai-usage.js';
import { MAX_SSE_LINE } from './sse.js';

const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** A real-shaped Anthropic stream: message_delta repeats cumulative figures, one of them null. */
const STREAM =
  ev('message_start', {
    message: { id: 'msg_1', model: 'claude-sonnet-4-5-20250929', usage: { input_tokens: 25, cache_creation_input_tokens: 1200, cache_read_input_tokens: 300, output_tokens: 1, cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 200 } } },
  }) +
  ev('ping', {}) +
  ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
  ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello, w\u00f6rld' } }) +
  ev('content_block_stop', { index: 0 }) +
  ev('message_delta', { delta: { stop_reason: null }, usage: { output_tokens: 7 } }) +
  ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 26, output_tokens: 15, cache_read_input_tokens: null } }) +
  ev('message_stop', {});

describe('StreamUsageReader', () => {
  it('takes message_start figures, then the latest non-null cumulative figures (output is not summed)', () => {
    const r = new StreamUsageReader();
    r.push(STREAM);
    const st = r.end();
    expect(st.complete).toBe(true);
    expect(st.errored).toBe(false);
    expect(st.model).toBe('claude-sonnet-4-5-20250929');
    expect(st.usage).toEqual({ inputTokens: 26, outputTokens: 15, cacheReadTokens: 300, cacheWriteTokens: 1200, cacheWrite1hTokens: 200 });
    expect(st.textBytes).toBe(13); // "Hello, wörld" is 12 chars, ö is 2 bytes
  });

  it('reads the same usage when the stream is split at every byte offset', () => {
    const bytes = new TextEncoder().encode(STREAM);
    for (let cut = 1; cut < bytes.length; cut += 7) {
      const r = new StreamUsageReader();
      r.push(bytes.slice(0, cut));
      r.push(bytes.slice(cut));
      const st = r.end();
      expect(st.usage.outputTokens, `cut ${cut}`).toBe(15);
      expect(st.usage.inputTokens).toBe(26);
      expect(st.complete).toBe(true);
    }
  });

  it('is not complete without message_stop, and notices error events', () => {
    const r = new StreamUsageReader();
    r.push(STREAM.slice(0, STREAM.indexOf('event: message_delta')));
    expect(r.end().complete).toBe(false);
    const e = new StreamUsageReader();
    e.push(ev('message_start', { message: { usage: { input_tokens: 1, output_tokens: 1 } } }) + ev('error', { error: { type: 'overloaded_error', message: 'x' } }));
    expect(e.end().errored).toBe(true);
  });
});

describe('usageFromMessage', () => {
  it('reads a non-streamed body', () => {
    expect(usageFromMessage({ usage: { input_tokens: 10, output_tokens: 20, cache_read_input_tokens: 5, cache_creation_input_tokens: 3 } })).toEqual({
      inputTokens: 10,
      outputTokens: 20,
      cacheReadTokens: 5,
      cacheWriteTokens: 3,
      cacheWrite1hTokens: 0,
    });
  });
  it('cache writes given only by lifetime (no cache_creation_input_tokens, as a compatible server may send): their sum (it charged none: fresh tester)', () => {
    expect(usageFromMessage({ usage: { input_tokens: 10, output_tokens: 10, cache_creation: { ephemeral_5m_input_tokens: 200, ephemeral_1h_input_tokens: 1000 } } })).toEqual({
      inputTokens: 10,
      outputTokens: 10,
      cacheReadTokens: 0,
      cacheWriteTokens: 1200,
      cacheWrite1hTokens: 1000,
    });
    // the total, when it is not less, stands; a total short of the lifetimes' sum gives way to it
    expect(usageFromMessage({ usage: { input_tokens: 10, output_tokens: 10, cache_creation_input_tokens: 1200, cache_creation: { ephemeral_1h_input_tokens: 1000 } } })?.cacheWriteTokens).toBe(1200);
    expect(usageFromMessage({ usage: { input_tokens: 10, output_tokens: 10, cache_creation_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 } } })?.cacheWriteTokens).toBe(3000);
  });
  it('returns null without usable usage', () => {
    expect(usageFromMessage({})).toBeNull();
    expect(usageFromMessage({ usage: { output_tokens: 3 } })).toBeNull();
    expect(usageFromMessage('x')).toBeNull();
  });
});

describe('estimateUsage', () => {
  it('never estimates zero: bytes/4 input and at least one output token', () => {
    expect(estimateUsage(null, 4001, 0)).toEqual({ inputTokens: 1001, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0 });
  });
  it('keeps reported figures when they exceed the byte estimate', () => {
    const partial = { inputTokens: 10, outputTokens: 3, cacheReadTokens: 5000, cacheWriteTokens: 0, cacheWrite1hTokens: 0 };
    expect(estimateUsage(partial, 400, 80)).toEqual({ inputTokens: 10, outputTokens: 20, cacheReadTokens: 5000, cacheWriteTokens: 0, cacheWrite1hTokens: 0 });
  });
  it('caps the output estimate at the request\'s max_tokens (a 200 MB reply body is not 52 million tokens), never below a reported figure', () => {
    expect(estimateUsage(null, 400, 200 * 1024 * 1024, 20).outputTokens).toBe(20);
    const partial = { inputTokens: 10, outputTokens: 30, cacheReadTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0 };
    expect(estimateUsage(partial, 400, 1_000_000, 20).outputTokens).toBe(30);
    expect(estimateUsage(null, 400, 0, 20).outputTokens).toBe(1);
  });
});

describe('deltaTextBytes (content_block_delta text read without JSON.parse)', () => {
  // Each text's UTF-8 size, worked out by hand: escapes count as the character they stand for.
  const cases: Array<[string, object, number]> = [
    ['ascii', { type: 'text_delta', text: 'tok1 ' }, 5],
    ['2-byte', { type: 'text_delta', text: 'w\u00f6rld' }, 6],
    ['newline and quote (escaped in JSON)', { type: 'text_delta', text: 'a\n"b"' }, 5],
    ['backslash at the end', { type: 'text_delta', text: 'a\\' }, 2],
    ['astral (a surrogate pair)', { type: 'text_delta', text: '\u{1F600}!' }, 5],
    ['tool input', { type: 'input_json_delta', partial_json: '{"path": "a.ts"}' }, 16],
    ['thinking', { type: 'thinking_delta', thinking: 'hmm \u20ac' }, 7],
    ['empty', { type: 'text_delta', text: '' }, 0],
  ];
  it.each(cases)('%s: the bytes of the text', (_name, delta, bytes) => {
    const data = JSON.stringify({ type: 'content_block_delta', index: 3, delta });
    expect(deltaTextBytes(data)).toBe(bytes);
    const r = new StreamUsageReader();
    r.push(`event: content_block_delta\ndata: ${data}\n\n`);
    expect(r.end().textBytes).toBe(bytes);
  });
  it('\\u escapes (ö, an escaped surrogate pair, a lone surrogate: U+FFFD) count as the UTF-8 they decode to', () => {
    // ö 2 + 😀 4 + U+FFFD 3 + x 1
    expect(deltaTextBytes('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\u00f6\\ud83d\\ude00\\ud800x"}}')).toBe(10);
  });
  it('a stream of deltas split anywhere (the fast path and the parser take turns): the same text bytes, the same usage', () => {
    const texts = ['tok1 ', 'w\u00f6rld', 'a\n"b"', '\u{1F600}', 'x'.repeat(300)];
    const deltas = texts.map((t) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: t } })).join('') + ev('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":1}' } });
    // 5 + 6 + 5 + 4 + 300 + 7
    const want = 327;
    const all = Buffer.from(STREAM.replace(ev('content_block_stop', { index: 0 }), deltas + ev('content_block_stop', { index: 0 })));
    for (let cut = 0; cut <= all.length; cut += 3) {
      const r = new StreamUsageReader();
      r.push(all.subarray(0, cut));
      r.push(all.subarray(cut, cut + 40));
      r.push(all.subarray(cut + 40));
      const st = r.end();
      expect(st.textBytes, `cut ${cut}`).toBe(13 + want);
      expect(st.usage.outputTokens).toBe(15);
      expect(st.complete).toBe(true);
    }
    // chunks cut at event boundaries, as upstreams send them: one event each, then all deltas in one chunk
    const [head, tail] = STREAM.split(ev('content_block_stop', { index: 0 }));
    const events = deltas.split(/(?<=\n\n)/);
    expect(events).toHaveLength(6);
    for (const parts of [[head!, ...events, tail!], [head!, deltas, tail!]]) {
      const r = new StreamUsageReader();
      for (const part of parts) r.push(Buffer.from(part));
      expect(r.end().textBytes).toBe(13 + want);
    }
    const crlf = new StreamUsageReader();
    crlf.push(Buffer.from(all.toString().replaceAll('\n', '\r\n')));
    expect(crlf.end().textBytes).toBe(13 + want);
  });
  it('another shape (extra fields, a signature, other key order) is left to JSON.parse: -1', () => {
    expect(deltaTextBytes('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","x":"b"}}')).toBe(-1);
    expect(deltaTextBytes('{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}')).toBe(-1);
    expect(deltaTextBytes('{"index":0,"type":"content_block_delta","delta":{"type":"text_delta","text":"a"}}')).toBe(-1);
    const r = new StreamUsageReader();
    r.push('event: content_block_delta\ndata: {"index":0,"type":"content_block_delta","delta":{"text":"abc","type":"text_delta"}}\n\n');
    expect(r.end().textBytes).toBe(3);
  });
});

describe('a stream line over the SSE parser\'s limit (sse.ts MAX_SSE_LINE)', () => {
  it('its characters count as text for the estimate and the usage is unknown, in both readers (fresh-tester finding: a 64 MiB text delta was charged 1 output token)', () => {
    const half = 'x'.repeat(MAX_SSE_LINE / 2 + 8);
    const start = 'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}\n\n';
    const a = new StreamUsageReader();
    a.push(Buffer.from(start));
    // one text_delta line in three chunks: held, then over the limit while held and skipped
    a.push(`event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"${half}`);
    a.push(half);
    a.push('"}}\n\n');
    const st = a.end();
    expect(st.invalidUsage).toBe(true);
    expect(st.textBytes).toBeGreaterThan(MAX_SSE_LINE);
    const o = new OpenAiStreamReader();
    o.push(`data: {"id":"c","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"${half}`);
    o.push(half);
    o.push('"}}]}\n\ndata: [DONE]\n\n');
    const os = o.end();
    expect(os.invalidUsage).toBe(true);
    expect(os.textBytes).toBeGreaterThan(MAX_SSE_LINE);
  });
});

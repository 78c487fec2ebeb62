import { describe, expect, it } from 'vitest';
import { SseParser } from './sse.js';

const enc = new TextEncoder();

describe('SseParser', () => {
  it('parses events, multi-line data, comments and default event names', () => {
    const p = new SseParser();
    const evs = p.push(': comment\nevent: a\ndata: 1\ndata: 2\n\ndata:x\n\nid: 5\nretry: 10\n\n');
    expect(evs).toEqual([
      { event: 'a', data: '1\n2' },
      { event: 'message', data: 'x' },
    ]);
  });

  it('gives the same events whatever the chunking, with CRLF and a split UTF-8 character', () => {
    const text = 'event: t\r\ndata: h\u00e9llo \u2603\r\n\r\nevent: u\rdata: {"a":1}\r\rdata: last\n\n';
    const bytes = enc.encode(text);
    const expected = [
      { event: 't', data: 'h\u00e9llo \u2603' },
      { event: 'u', data: '{"a":1}' },
      { event: 'message', data: 'last' },
    ];
    for (let cut = 0; cut <= bytes.length; cut++) {
      const p = new SseParser();
      const got = [...p.push(bytes.slice(0, cut)), ...p.push(bytes.slice(cut)), ...p.end()];
      expect(got, `cut at ${cut}`).toEqual(expected);
    }
    // one byte at a time
    const p = new SseParser();
    const got = [];
    for (const b of bytes) got.push(...p.push(new Uint8Array([b])));
    expect(got).toEqual(expected);
  });

  it('drops an unterminated last event (per the SSE spec)', () => {
    const p = new SseParser();
    expect(p.push('data: a\n\ndata: b\n')).toEqual([{ event: 'message', data: 'a' }]);
    expect(p.end()).toEqual([]);
  });
});

describe('SseParser: long lines', () => {
  it('one event of 5 MB pushed in 64 KiB chunks (CRLF, a split character at every cut) comes out whole', () => {
    // fresh-user finding: each chunk searched the whole line held so far again (quadratic)
    const data = JSON.stringify({ type: 'content_block_delta', delta: { type: 'text_delta', text: '\u00e9x'.repeat(5 * 1024 * 1024 / 3) } });
    const bytes = enc.encode(`event: content_block_delta\r\ndata: ${data}\r\n\r\ndata: after\r\n\r\n`);
    const p = new SseParser();
    const got = [];
    for (let at = 0; at < bytes.length; at += 65_535) got.push(...p.push(bytes.subarray(at, at + 65_535)));
    expect(got).toEqual([
      { event: 'content_block_delta', data },
      { event: 'message', data: 'after' },
    ]);
  });

  it('a line over the limit is dropped whole, split over chunks or not; the lines after it are read', () => {
    const p = new SseParser(10);
    expect(p.push('data: 0123')).toEqual([]);
    expect(p.push('456789abc')).toEqual([]); // 19 characters held: over 10, dropped
    expect(p.push('def\ndata: ok\n\n')).toEqual([{ event: 'message', data: 'ok' }]);
    // the dropped line's characters are counted (readers charge them as text): 10 + 9 + 3
    expect(p.skipped).toBe(22);
    // a held line of exactly the limit is kept
    expect(p.push('data: 1234')).toEqual([]);
    expect(p.push('\n\n')).toEqual([{ event: 'message', data: '1234' }]);
    expect(p.push('event: e\ndata: x\n\n')).toEqual([{ event: 'e', data: 'x' }]);
    expect(p.skipped).toBe(22);
  });
});

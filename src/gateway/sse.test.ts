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

import { describe, it, expect } from 'vitest';
import { SseParser, parseSseStream, type SseEvent } from './sse.js';

function parseAll(chunks: string[]): SseEvent[] {
  const p = new SseParser();
  const out: SseEvent[] = [];
  for (const c of chunks) out.push(...p.push(c));
  out.push(...p.end());
  return out;
}

const STREAM =
  ': hello comment\r\n' +
  'id: 1\r\n' +
  'event: job\r\n' +
  'data: {"a":1}\r\n' +
  '\r\n' +
  'data: line one\n' +
  'data: line two\n' +
  'data:no-space\n' +
  '\n' +
  'id: 7\r' +
  'event: end\r' +
  'data: {"status":"succeeded"}\r' +
  '\r';

const EXPECTED: SseEvent[] = [
  { event: 'job', data: '{"a":1}', id: '1' },
  { event: 'message', data: 'line one\nline two\nno-space', id: '1' },
  { event: 'end', data: '{"status":"succeeded"}', id: '7' },
];

describe('SseParser', () => {
  it('parses CRLF, LF and CR line endings, comments, multi-line data and ids', () => {
    expect(parseAll([STREAM])).toEqual(EXPECTED);
  });

  it('gives the same events wherever the stream is split (every split point, two chunks)', () => {
    for (let i = 0; i <= STREAM.length; i++) {
      expect(parseAll([STREAM.slice(0, i), STREAM.slice(i)]), `split at ${i}`).toEqual(EXPECTED);
    }
  });

  it('gives the same events fed one character at a time', () => {
    expect(parseAll(STREAM.split(''))).toEqual(EXPECTED);
  });

  it('treats CR then LF in the next chunk as one line break (no phantom blank line)', () => {
    // If "\r" | "\n" were two breaks, the blank line would dispatch "a" early and lose "b".
    expect(parseAll(['data: a\r', '\ndata: b\r\n\r\n'])).toEqual([{ event: 'message', data: 'a\nb', id: '' }]);
  });

  it('does not dispatch an event without data, nor an unterminated one at the end', () => {
    expect(parseAll(['event: x\n\n', 'id: 3\n\n', 'data: tail'])).toEqual([]);
  });

  it('keeps the last id across events, ignores ids with NUL, reads retry', () => {
    const p = new SseParser();
    const evs = p.push('id: 5\ndata: a\n\nid: bad\u0000\nretry: 1500\ndata: b\n\nretry: x\ndata: c\n\n');
    expect(evs).toEqual([
      { event: 'message', data: 'a', id: '5' },
      { event: 'message', data: 'b', id: '5', retry: 1500 },
      { event: 'message', data: 'c', id: '5' },
    ]);
    expect(p.lastEventId).toBe('5');
  });

  it('strips a leading BOM and a single space after the colon only', () => {
    expect(parseAll(['\uFEFFdata:  two spaces\n\n'])).toEqual([{ event: 'message', data: ' two spaces', id: '' }]);
  });

  it('an empty data line contributes an empty line', () => {
    expect(parseAll(['data\ndata\n\n'])).toEqual([{ event: 'message', data: '\n', id: '' }]);
  });
});

describe('parseSseStream', () => {
  it('joins a UTF-8 character split across byte chunks', async () => {
    const bytes = new TextEncoder().encode('event: job\ndata: café → ✓\n\n');
    async function* chunks() {
      for (const b of bytes) yield new Uint8Array([b]);
    }
    const out: SseEvent[] = [];
    for await (const ev of parseSseStream(chunks())) out.push(ev);
    expect(out).toEqual([{ event: 'job', data: 'café → ✓', id: '' }]);
  });

  it('reads a web ReadableStream and cancels it when the consumer stops early', async () => {
    let cancelled = false;
    const enc = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(enc.encode('data: 1\n\ndata: 2\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    const seen: string[] = [];
    for await (const ev of parseSseStream(stream)) {
      seen.push(ev.data);
      break;
    }
    expect(seen).toEqual(['1']);
    expect(cancelled).toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import { cutLogLine, LineSplitter, truncatedLineText, type Line } from './lines.js';

function collect(max?: number): { lines: Line[]; s: LineSplitter } {
  const lines: Line[] = [];
  const s = new LineSplitter((l) => lines.push(l), max ? { maxLineBytes: max } : {});
  return { lines, s };
}

describe('LineSplitter', () => {
  it('joins a line split across chunks and splits several lines in one chunk', () => {
    const { lines, s } = collect();
    s.push('{"a":');
    s.push('1}\n{"b"');
    s.push(':2}\nlast');
    s.end();
    expect(lines.map((l) => l.text)).toEqual(['{"a":1}', '{"b":2}', 'last']);
    expect(lines.every((l) => !l.truncated && !l.invalidUtf8)).toBe(true);
  });

  it('joins a UTF-8 character split across chunks byte by byte', () => {
    const { lines, s } = collect();
    const bytes = Buffer.from('é€😀\n', 'utf8'); // 2 + 3 + 4 bytes + newline
    for (const b of bytes) s.push(Uint8Array.of(b));
    s.end();
    expect(lines).toEqual([{ text: 'é€😀', truncated: false, droppedBytes: 0, invalidUtf8: false }]);
  });

  it('strips CR of CRLF and keeps empty lines', () => {
    const { lines, s } = collect();
    s.push('a\r\n\r\nb\n');
    s.end();
    expect(lines.map((l) => l.text)).toEqual(['a', '', 'b']);
  });

  it('emits nothing at end() when the stream ended with a newline', () => {
    const { lines, s } = collect();
    s.push('x\n');
    s.end();
    expect(lines).toHaveLength(1);
  });

  it('cuts a huge line, reports it truncated with the dropped byte count, and goes on', () => {
    const { lines, s } = collect(16);
    s.push('0123456789');
    s.push('abcdefghij'); // 20 bytes so far: cut at 16
    s.push('KLMNO\nnext\n'); // 5 more dropped
    s.end();
    expect(lines).toEqual([
      { text: '0123456789abcdef', truncated: true, droppedBytes: 9, invalidUtf8: false },
      { text: 'next', truncated: false, droppedBytes: 0, invalidUtf8: false },
    ]);
  });

  it('does not split a multi-byte character when cutting', () => {
    const { lines, s } = collect(8);
    // 'aaaaaa' (6 bytes) + '€' (3 bytes: would straddle the 8-byte cut) + 'b'
    s.push('aaaaaa€b\n');
    s.end();
    expect(lines[0]).toEqual({ text: 'aaaaaa', truncated: true, droppedBytes: 4, invalidUtf8: false });
  });

  it('reports a truncated line that never got its newline at end()', () => {
    const { lines, s } = collect(4);
    s.push('abcdefgh');
    s.end();
    expect(lines).toEqual([{ text: 'abcd', truncated: true, droppedBytes: 4, invalidUtf8: false }]);
  });

  it('reports invalid UTF-8 instead of dropping the line', () => {
    const { lines, s } = collect();
    s.push(Buffer.from([0x6f, 0x6b, 0xff, 0xfe, 0x0a, 0x78, 0x0a]));
    s.end();
    expect(lines).toEqual([
      { text: 'ok\uFFFD\uFFFD', truncated: false, droppedBytes: 0, invalidUtf8: true },
      { text: 'x', truncated: false, droppedBytes: 0, invalidUtf8: false },
    ]);
  });

  it('handles an 8 MiB+ line by default without holding it', () => {
    const { lines, s } = collect();
    const mib = Buffer.alloc(1024 * 1024, 0x61);
    for (let i = 0; i < 9; i++) s.push(mib);
    s.push('\n{}\n');
    s.end();
    expect(lines).toHaveLength(2);
    expect(lines[0]?.truncated).toBe(true);
    expect(lines[0]?.text.length).toBe(8 * 1024 * 1024);
    expect(lines[0]?.droppedBytes).toBe(1024 * 1024);
    expect(lines[1]?.text).toBe('{}');
  });
});

describe('cutLogLine', () => {
  it('keeps a line up to the limit as it is', () => {
    expect(cutLogLine('x'.repeat(10), 10)).toBe('x'.repeat(10));
    expect(cutLogLine('', 10)).toBe('');
  });

  it('cuts a longer one and says how many UTF-8 bytes it cut, thousands separated', () => {
    expect(cutLogLine('x'.repeat(20_000), 8192)).toBe(`${'x'.repeat(8192)}… [11,808 bytes cut]`);
    // 10,000 × é (2 bytes each): 1,808 of them cut = 3,616 bytes.
    expect(cutLogLine('é'.repeat(10_000), 8192)).toBe(`${'é'.repeat(8192)}… [3,616 bytes cut]`);
    expect(cutLogLine('abcdef', 4)).toBe('abcd… [2 bytes cut]');
  });

  it('never keeps half of a surrogate pair', () => {
    // 'a' then 5,000 rockets (2 UTF-16 units, 4 bytes each): unit 8191 starts a pair, so the cut
    // comes before it: 'a' + 4,095 rockets kept, 905 rockets (3,620 bytes) cut.
    expect(cutLogLine('a' + '🚀'.repeat(5000), 8192)).toBe(`a${'🚀'.repeat(4095)}… [3,620 bytes cut]`);
  });
});

describe('truncatedLineText', () => {
  it('a 10,000,000-byte line read as its first 8 MiB: the marker counts every byte left out, within 8,192 characters', () => {
    const read = 8 * 1024 * 1024;
    const t = truncatedLineText({ text: 'y'.repeat(read), truncated: true, droppedBytes: 10_000_000 - read, invalidUtf8: false }, 8192);
    const head = '[line of 10000000 bytes truncated, not parsed] ';
    expect(t.startsWith(head + 'yyy')).toBe(true);
    const kept = 8192 - head.length - 32;
    expect(t).toBe(`${head}${'y'.repeat(kept)}… [${(10_000_000 - kept).toLocaleString('en-US')} bytes cut]`);
    expect(t.length).toBeLessThanOrEqual(8192);
  });
});

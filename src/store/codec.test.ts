import { describe, expect, it } from 'vitest';
import { codecFor, storable } from './codec.js';

// codec.json skips the replacer when the plain text has nothing to change: its answer must be
// exactly the replacer's on every input, including the ones that need it.
const slow = (v: unknown): string | undefined => JSON.stringify(v, (_k, x: unknown) => (typeof x === 'string' ? storable(x) : x));

describe('codec.json', () => {
  const json = codecFor('postgres').json;
  const cases: unknown[] = [
    { a: 'plain', n: 1, b: [true, null, 'x'] },
    'top\u0000level',
    { s: 'nul \u0000 inside', k: ['\u0000'] },
    { lone: 'cut \uD83D', low: '\uDE00 alone', pair: 'ok \uD83D\uDE00' },
    { literal: 'a backslash-u text: \\u0000 and \\ud800' },
    { 'key\u0000': 'keys are kept as they are' },
    { deep: { deeper: [{ x: 'é ✓ \u001b \u2028' }] } },
    undefined,
    null,
    42,
  ];
  it('equals the replacer version on every input', () => {
    for (const v of cases) expect(json(v)).toBe(slow(v));
  });
  it('replaces NUL and lone surrogates with U+FFFD', () => {
    expect(JSON.parse(json({ s: 'a\u0000b\uD800' }))).toEqual({ s: 'a\uFFFDb\uFFFD' });
    expect(json({ s: 'ok \uD83D\uDE00' })).toBe('{"s":"ok \uD83D\uDE00"}');
  });
});

import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, findNul, jsonDepth, parseJsonBounded, replaceNul } from './json-depth.js';

describe('jsonDepth / parseJsonBounded', () => {
  it('counts nesting of objects and arrays, not brackets inside strings (escaped quotes included)', () => {
    expect(jsonDepth('1')).toBe(0);
    expect(jsonDepth('{}')).toBe(1);
    expect(jsonDepth('{"a":[1,{"b":[]}],"c":{}}')).toBe(4);
    expect(jsonDepth('{"a":"[[[[\\"{{{{"}')).toBe(1);
    expect(jsonDepth('[' + '"\\\\"'.repeat(3) + ']')).toBe(1);
  });

  it('stops past the limit; a 200,000-level body is refused before parsing, 128 levels pass', () => {
    const deep = '{"k":' + '['.repeat(200_000) + ']'.repeat(200_000) + '}';
    expect(jsonDepth(deep, 10)).toBe(11);
    expect(() => parseJsonBounded(deep)).toThrow(new RangeError(`JSON nested deeper than ${MAX_JSON_DEPTH} levels`));
    const ok = '['.repeat(128) + ']'.repeat(128);
    expect(JSON.stringify(parseJsonBounded(ok))).toBe(ok);
    expect(() => parseJsonBounded('['.repeat(129) + ']'.repeat(129))).toThrow(/deeper than 128/);
    expect(() => parseJsonBounded('{bad')).toThrow(SyntaxError);
  });
});

describe('findNul / replaceNul', () => {
  it('finds the first string or key holding NUL by its dotted path; replaces NUL with U+FFFD everywhere', () => {
    expect(findNul({ a: 'ok', b: [1, 'x\u0000y'] })).toBe('b.1');
    expect(findNul({ 'k\u0000': 1 })).toBe('k\u0000');
    expect(findNul('\u0000')).toBe('(body)');
    expect(findNul({ a: 'no nul', b: ['\\u0000 as text'] })).toBeNull();
    expect(replaceNul({ t: 'a\u0000b', l: ['\u0000'], 'k\u0000': 2, n: 1 })).toEqual({ t: 'a\uFFFDb', l: ['\uFFFD'], 'k\uFFFD': 2, n: 1 });
  });
});

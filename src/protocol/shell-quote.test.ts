import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellLine, shellQuote } from './shell-quote.js';

describe('shellQuote', () => {
  it('leaves plain words alone, single-quotes the rest', () => {
    expect(shellQuote('os=linux,toolchain=python')).toBe('os=linux,toolchain=python');
    expect(shellQuote('http://build-1:8787')).toBe('http://build-1:8787');
    expect(shellQuote('flr_AbC-12_x')).toBe('flr_AbC-12_x');
    expect(shellQuote('k=v v')).toBe("'k=v v'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
    expect(shellQuote('')).toBe("''");
    expect(shellQuote('=cmd')).toBe("'=cmd'");
    expect(shellQuote('~/data')).toBe("'~/data'");
  });

  it('a shell reads back every word as given', () => {
    const words = ['k=v v', "it's", '$HOME', '`id`', 'a"b', 'back\\slash', '*', 'two\nlines', '', '-x', '=x', 'ünïcode', '!bang', 'a;b|c&d', '~'];
    const out = execFileSync('/bin/sh', ['-c', `for w in ${shellLine(words)}; do printf '%s\\0' "$w"; done`], { encoding: 'utf8' });
    expect(out.split('\0').slice(0, -1)).toEqual(words);
  });
});

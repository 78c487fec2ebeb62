import { describe, expect, it } from 'vitest';
import { LabelValue } from './labels.js';
import { oneLine, oneLineText } from './text.js';

describe('one-line text', () => {
  it('oneLine replaces each run of C0/C1 controls, DEL, U+2028 and U+2029 by one space and keeps the rest', () => {
    expect(oneLine('plain – ünïcode 🚀')).toBe('plain – ünïcode 🚀');
    expect(oneLine('a\r\n\tb\u007fc\u009bd\u2028\u2029e\u0000')).toBe('a b c d e ');
  });

  it('oneLineText trims, bounds the length and names the first bad character', () => {
    const t = oneLineText(5);
    expect(t.parse('  hi  ')).toBe('hi');
    expect(t.safeParse('123456').success).toBe(false);
    expect(t.safeParse('   ').success).toBe(false);
    expect(t.safeParse('a\u2029b').error?.issues[0]?.message).toBe('must be one line of printable text: found U+2029 (it is shown in listings)');
    expect(t.safeParse('a\tb').error?.issues[0]?.message).toBe('must be one line of printable text: found a tab (U+0009) (it is shown in listings)');
  });

  it('a label value may not hold a terminal escape or a line separator', () => {
    expect(LabelValue.safeParse('x86_64 / ünïcode').success).toBe(true);
    expect(LabelValue.safeParse('a\u001b[2Jb').success).toBe(false);
    expect(LabelValue.safeParse('a\u2028b').success).toBe(false);
  });
});

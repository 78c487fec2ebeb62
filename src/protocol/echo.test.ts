import { describe, expect, it } from 'vitest';
import { cutEcho, cutQuotedEchoes } from './echo.js';
import { parseLabelList } from './labels.js';

const x = (n: number) => 'x'.repeat(n);

describe('cutting repeated bad values', () => {
  it('cutEcho: whole up to 100 characters, else the first 100 and the length', () => {
    expect(cutEcho(x(100))).toBe(x(100));
    expect(cutEcho(x(5000))).toBe(`${x(100)}… (5000 characters)`);
    // Characters, not UTF-16 units: an emoji is not split.
    expect(cutEcho('😀'.repeat(101))).toBe(`${'😀'.repeat(100)}… (101 characters)`);
    expect(cutEcho('😀'.repeat(100))).toBe('😀'.repeat(100));
  });

  it('cutQuotedEchoes: long quoted runs cut once, short ones and runs cut already kept', () => {
    expect(cutQuotedEchoes(`option '--labels <k=v,...>' argument 'k=${x(4998)}' is invalid. label "${x(300)}"`)).toBe(
      `option '--labels <k=v,...>' argument 'k=${x(98)}… (5000 characters)' is invalid. label "${x(100)}… (300 characters)"`,
    );
    const once = `label "${x(100)}… (5000 characters)" must look like key=value`;
    expect(cutQuotedEchoes(once)).toBe(once);
  });

  it('parseLabelList repeats a bad pair, key or value cut', () => {
    expect(() => parseLabelList(x(5000))).toThrow(new Error(`label "${x(100)}… (5000 characters)" must look like key=value`));
    expect(() => parseLabelList(`${x(5000)}=v`)).toThrow(new Error(`label key "${x(100)}… (5000 characters)": label key must be 1-63 chars of [A-Za-z0-9._/-]`));
    expect(() => parseLabelList(`k=${x(200)},k=${x(150)}`)).toThrow(new Error(`label key "k" is given twice (k=${x(100)}… (200 characters), k=${x(100)}… (150 characters)): give each key once`));
  });
});

import { describe, expect, it } from 'vitest';
import { jsonNumber, jsonString } from './json-text.js';

describe('jsonString / jsonNumber', () => {
  it('write what JSON.stringify writes', () => {
    const strings = ['', 'claude-haiku-4-5', 'a"b', 'a\\b', 'tab\there', 'nl\n', '\u0000', '\u001f', '\u007f', 'é', '日本', '\ud83d\ude00', '\ud800', '</script>', "it's", '~ {}[]'];
    for (const s of strings) expect(jsonString(s), JSON.stringify(s)).toBe(JSON.stringify(s));
    // every single code unit below 0x100, and a few past it
    for (let c = 0; c < 0x100; c++) expect(jsonString(String.fromCharCode(c))).toBe(JSON.stringify(String.fromCharCode(c)));
    for (const n of [0, -0, 1, -1, 1.5, 1e21, 1e-7, 2 ** 53 - 1, NaN, Infinity, -Infinity]) expect(jsonNumber(n), String(n)).toBe(JSON.stringify(n));
  });
});

import { describe, expect, it } from 'vitest';
import { FRAGMENT_MASK, KeyFragments } from './key-fragments.js';
import { KeyMask } from './key-mask.js';

const KEY = 'sk-ant-api03-C40JK6ZGLqbR6Wmvd1Y8GgQHH9Swu1iaRl2bjae-RdZcqWXryChsohVSkfZZeH7DTn1ibK85i-aMc4gyqeUGJX7mUf';

describe('KeyFragments', () => {
  it('masks a run holding 10 consecutive characters of a key, wherever in the key they come from; shorter pieces and other text stay', () => {
    const f = new KeyFragments([KEY]);
    expect(f.text(`bad key ${KEY.slice(0, -4)} end`)).toBe(`bad key ${FRAGMENT_MASK} end`);
    expect(f.text(`x-trunc=${KEY.slice(0, 30)}`)).toBe(`x-trunc=${FRAGMENT_MASK}`);
    // a run extends over the characters the keys hold ('.' is in none of them here)
    expect(f.text(`mid ${KEY.slice(40, 50)}.`)).toBe(`mid ${FRAGMENT_MASK}.`);
    expect(f.text(`two ${KEY.slice(20, 35)} and ${KEY.slice(60, 80)}!`)).toBe(`two ${FRAGMENT_MASK} and ${FRAGMENT_MASK}!`);
    // 9 characters: no fragment
    expect(f.text(`short ${KEY.slice(40, 49)} ok`)).toBe(`short ${KEY.slice(40, 49)} ok`);
    expect(f.text('{"error":{"type":"authentication_error","message":"invalid x-api-key"}}')).toBe('{"error":{"type":"authentication_error","message":"invalid x-api-key"}}');
    // inside JSON: the run stops at the string's quote
    expect(JSON.parse(f.text(JSON.stringify({ m: `key ${KEY.slice(5, 60)}` })))).toEqual({ m: `key ${FRAGMENT_MASK}` });
    expect(new KeyFragments(['short-key']).active).toBe(false);
    // windows that may be words are not looked for: a test key holding "background" masks no word
    expect(new KeyFragments(['sk-test-background']).text('param: background')).toBe('param: background');
  });

  it('KeyMask masks fragments in error replies (body and header values), not in 2xx ones; whole keys in both', () => {
    const m = new KeyMask([KEY]);
    const err = m.reply({ status: 400, headers: { 'x-trunc': KEY.slice(0, 30) }, body: Buffer.from(JSON.stringify({ error: { message: `bad ${KEY} / ${KEY.slice(0, 60)}` } })) });
    expect(err.headers['x-trunc']).toBe(FRAGMENT_MASK);
    expect(JSON.parse(err.body!.toString())).toEqual({ error: { message: `bad [redacted key ...7mUf] / ${FRAGMENT_MASK}` } });
    const ok = m.reply({ status: 200, headers: {}, body: Buffer.from(`{"t":"${KEY.slice(0, 60)}"}`) });
    expect(ok.body!.toString()).toBe(`{"t":"${KEY.slice(0, 60)}"}`);
  });
});

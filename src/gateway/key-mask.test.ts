import { describe, expect, it } from 'vitest';
import { KeyMask, maskedKey } from './key-mask.js';
import { splitKeys } from './retry.js';

const A = 'sk-ant-api03-secret-AAAA';
const B = 'sk-proj-secret-BBBB';

async function collect(mask: KeyMask, chunks: string[]): Promise<{ text: string; pieces: string[] }> {
  async function* src() {
    for (const c of chunks) yield Buffer.from(c);
  }
  const pieces: string[] = [];
  for await (const c of mask.stream(src())) pieces.push(Buffer.from(c).toString('utf8'));
  return { text: pieces.join(''), pieces };
}

describe('KeyMask', () => {
  it('masks every occurrence of every key in text, bytes and headers; leaves other replies as they are', () => {
    const m = new KeyMask([A, B]);
    expect(maskedKey(A)).toBe('[redacted key ...AAAA]');
    expect(m.text(`x ${A} y ${B} z ${A}`)).toBe('x [redacted key ...AAAA] y [redacted key ...BBBB] z [redacted key ...AAAA]');
    expect(m.bytes(Buffer.from(`é${A}é`)).toString('utf8')).toBe('é[redacted key ...AAAA]é');
    const clean = { status: 200, headers: { a: 'b' }, body: Buffer.from('{"ok":true}') };
    expect(m.reply(clean)).toBe(clean);
    const dirty = m.reply({ status: 401, headers: { 'x-echo': `Bearer ${B}` }, body: Buffer.from(`{"m":"${A}"}`) });
    expect(dirty.headers['x-echo']).toBe('Bearer [redacted key ...BBBB]');
    expect(dirty.body!.toString()).toBe('{"m":"[redacted key ...AAAA]"}');
  });

  it('a percent-encoded key is masked as the key: encodeURIComponent\'s form, every non-alphanumeric encoded, either hex case; in text, bodies and streams (fresh-tester finding)', async () => {
    const key = 'sk-ant-api03_x+y/z=AAAA';
    const m = new KeyMask([key]);
    const forms = [encodeURIComponent(key), 'sk%2Dant%2Dapi03%5Fx%2By%2Fz%3DAAAA', 'sk%2dant%2dapi03%5fx%2by%2fz%3dAAAA', encodeURIComponent(key).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase())];
    for (const f of forms) {
      expect(m.text(`url=https://x/?key=${f}&a=1`), f).toBe('url=https://x/?key=[redacted key ...AAAA]&a=1');
      expect(m.bytes(Buffer.from(`{"m":"${f}"}`)).toString(), f).toBe('{"m":"[redacted key ...AAAA]"}');
      const text = `data: {"error":"bad key ${f}"}\n\n`;
      const cut = text.indexOf(f) + 7;
      expect((await collect(m, [text.slice(0, cut), text.slice(cut)])).text, f).toBe('data: {"error":"bad key [redacted key ...AAAA]"}\n\n');
    }
    // a key of letters, digits and - only: encodeURIComponent leaves it as it is; %2D is still masked
    expect(new KeyMask([A]).text(`k=${A.replaceAll('-', '%2D')}`)).toBe('k=[redacted key ...AAAA]');
  });

  it('a header whose name holds a key (lower-cased, as header names are) is dropped; the others stay (fresh-tester finding)', () => {
    const m = new KeyMask([A, B]);
    const r = m.reply({ status: 200, headers: { [`x-k-${A.toLowerCase()}`]: '1', [`x-${encodeURIComponent(B).toLowerCase()}-y`]: '2', 'x-request-id': 'req_1', 'content-type': 'application/json' }, body: Buffer.from('{}') });
    expect(r.headers).toEqual({ 'x-request-id': 'req_1', 'content-type': 'application/json' });
  });

  it('a key containing another is masked whole; keys under 8 characters are not masked (no secret, and would garble text)', () => {
    const m = new KeyMask(['secret-1234', 'secret-1234-longer-9999', 'ollama']);
    expect(m.text('secret-1234-longer-9999 secret-1234 ollama')).toBe('[redacted key ...9999] [redacted key ...1234] ollama');
    expect(new KeyMask(['ollama', '']).active).toBe(false);
    expect(splitKeys(' a, b ,,c ')).toEqual(['a', 'b', 'c']);
  });

  it('streams: a key split across chunks (even byte by byte) is masked; chunks with no key start pass at once', async () => {
    const m = new KeyMask([A, B]);
    const text = `data: {"error":"bad key ${A}"}\n\n`;
    for (const cut of [5, text.indexOf(A) + 1, text.indexOf(A) + 10, text.indexOf(A) + A.length - 1]) {
      expect((await collect(m, [text.slice(0, cut), text.slice(cut)])).text).toBe(text.replace(A, '[redacted key ...AAAA]'));
    }
    expect((await collect(m, [...text])).text).toBe(text.replace(A, '[redacted key ...AAAA]'));
    // ordinary SSE events end in a blank line: nothing is held back
    const events = ['event: a\ndata: {}\n\n', 'event: b\ndata: {"s":"sk"}\n\n'];
    expect((await collect(m, events)).pieces).toEqual(events);
    // a tail that only looks like a key's start is released with the next chunk, or at the end
    expect((await collect(m, ['data: sk-pro', 'bably not\n\n'])).pieces).toEqual(['data: ', 'sk-probably not\n\n']);
    expect((await collect(m, ['data: sk-'])).pieces).toEqual(['data: ', 'sk-']);
  });

  describe('a key written with JSON escapes (RFC 8259 §7: `\\uXXXX` for any character, `\\/` for `/`)', () => {
    // fresh-user finding: an upstream echoing the key as `\u0073k-ant…` or `sk\u002dant…` got it to the job
    const K = 'sk-ant-api03-sec/ret-AAAA';
    const esc = (ch: string, upper = false) => '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0')[upper ? 'toUpperCase' : 'toLowerCase']();
    const forms = [
      esc('s') + K.slice(1), // the first character
      K.replace(/-/g, esc('-', true)), // every `-`, upper-case hex
      K.replace('/', '\\/'), // `\/`
      [...K].map((c) => esc(c)).join(''), // every character
      K.slice(0, -1) + esc('A'), // the last
    ];
    const masked = '[redacted key ...AAAA]';

    it('whole bodies: every form is masked (each decodes to the key); text with escapes but no key is the same buffer', () => {
      const m = new KeyMask([K, B]);
      for (const f of forms) {
        expect(JSON.parse(`"${f}"`), f).toBe(K);
        const body = `{"type":"error","error":{"message":"key ${f} refused; again: ${f}\\n"}}`;
        expect(m.bytes(Buffer.from(body)).toString(), f).toBe(`{"type":"error","error":{"message":"key ${masked} refused; again: ${masked}\\n"}}`);
      }
      const clean = Buffer.from('{"text":"caf\\u00e9 \\/ sk-ant-api03 \\u0073k"}');
      expect(m.bytes(clean)).toBe(clean);
      // an escape that is not the key's character is no match
      expect(m.bytes(Buffer.from(esc('t') + K.slice(1))).toString()).toBe(esc('t') + K.slice(1));
    });

    it('streams: every form, cut at every byte between two chunks, reaches the reader masked and never whole', async () => {
      const m = new KeyMask([K]);
      for (const f of forms) {
        const text = `data: {"error":"bad key ${f}"}\n\n`;
        const want = text.replace(f, masked);
        for (let cut = 1; cut < text.length; cut++) {
          const out = await collect(m, [text.slice(0, cut), text.slice(cut)]);
          expect(out.text, `${f} cut at ${cut}`).toBe(want);
        }
      }
    });
  });

  it('a key holding " or \\ (JSON.stringify writes them backslash-escaped), in bodies, streams and headers; a JSON-escaped key in a header', async () => {
    // fresh-user findings: such a key leaked in all three spellings; `{"k":"\u0073k-..."}` in a header passed
    const K = 'sk-test\\back"quote=+/x1234';
    const m = new KeyMask([K, A]);
    const inJson = JSON.stringify(K).slice(1, -1); // sk-test\\back\"quote=+/x1234
    for (const form of [inJson, inJson.replace('/', '\\/'), [...K].map((c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')).join('')]) {
      expect(JSON.parse(`"${form}"`)).toBe(K);
      expect(m.bytes(Buffer.from(`{"e":"bad ${form}"}`)).toString(), form).toBe('{"e":"bad [redacted key ...1234]"}');
      const text = `data: {"e":"bad ${form}"}\n\n`;
      for (let cut = 1; cut < text.length; cut++) expect((await collect(m, [text.slice(0, cut), text.slice(cut)])).text, `${form} cut at ${cut}`).toBe('data: {"e":"bad [redacted key ...1234]"}\n\n');
    }
    const escapedA = '\\u0073' + A.slice(1);
    const r = m.reply({ status: 400, headers: { 'x-echo': `{"k":"${escapedA}"}`, 'x-plain': 'no \\n key' }, body: null });
    expect(r.headers).toEqual({ 'x-echo': '{"k":"[redacted key ...AAAA]"}', 'x-plain': 'no \\n key' });
  });

  it('the mask shows a key\'s last 4 characters only where JSON and headers take them as they are; others as *', () => {
    // fresh-user finding: a key ending `\cc` made `[redacted key ...b\cc]`, and the reply's JSON no longer parsed
    const K = 'sk-ant-key1/aaaa"bb\\cc';
    expect(maskedKey(K)).toBe('[redacted key ...b*cc]');
    expect(maskedKey('sk-quote-"end"')).toBe('[redacted key ...end*]');
    expect(maskedKey('sk-ant-api03-AAAA')).toBe('[redacted key ...AAAA]');
    const m = new KeyMask([K]);
    const body = JSON.stringify({ error: { message: `bad ${K}` } });
    expect(JSON.parse(m.bytes(Buffer.from(body)).toString())).toEqual({ error: { message: 'bad [redacted key ...b*cc]' } });
  });
});


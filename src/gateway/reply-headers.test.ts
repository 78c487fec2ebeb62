/**
 * Upstream reply headers node:http would not write as decoded text (fresh-user finding: a
 * provider's `X-Region: 日本` in UTF-8, or a lone byte 0xE9, made the gateway's writeHead throw,
 * an unhandled rejection that ended the whole `flotilla up` with its runner and jobs). A raw TCP
 * upstream sends such bytes; the gateway (plain node:http, memory store) passes them on byte for
 * byte, records the call, and serves the next one. A reply node refuses a header of (a handler's
 * own, not an upstream's: undici's parser refuses control characters first) goes out without it.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../core/log.js';
import { listenNode, startGateway } from './test-server.js';
import { nodeHandler } from './node-adapter.js';
import { rawUpstream } from './test-upstream.js';

const TOKEN = 'flj_replyheaders_0123456789abcdef';
const UTF8 = Buffer.from('日本', 'utf8');
const LATIN1_BYTE = Buffer.from([0x63, 0x61, 0x66, 0xe9]); // "caf" + 0xE9, no UTF-8
const USAGE = { input_tokens: 100, output_tokens: 20 };

/** A raw TCP upstream answering each request with those header bytes and `reply(stream)`'s body. */
const upstream = (reply: (stream: boolean) => { type: string; body: string }) =>
  rawUpstream((socket, sent) => {
    const stream = (JSON.parse(sent) as { stream?: boolean }).stream === true;
    const r = reply(stream);
    const body = Buffer.from(r.body);
    const head = Buffer.concat([
      Buffer.from(`HTTP/1.1 200 OK\r\ncontent-type: ${r.type}\r\ncontent-length: ${body.length}\r\nx-region: `, 'latin1'),
      UTF8,
      Buffer.from('\r\nx-name: ', 'latin1'),
      LATIN1_BYTE,
      Buffer.from('\r\nx-plain: ok\r\n\r\n', 'latin1'),
    ]);
    // a stream's head alone first (as a model thinks before its first event): the gateway sends
    // the client its headers before any event; a whole reply in one write
    if (!stream) return void socket.write(Buffer.concat([head, body]));
    socket.write(head);
    setTimeout(() => socket.write(body), 50);
  });

const sse = (events: Array<[string, object]>) => events.map(([e, d]) => `event: ${e}\ndata: ${JSON.stringify(d)}\n\n`).join('');
const STREAM = sse([
  ['message_start', { type: 'message_start', message: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 100, output_tokens: 1 } } }],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 20 } }],
  ['message_stop', { type: 'message_stop' }],
]);

describe('upstream reply headers with bytes past ASCII', () => {
  it('pass to the client byte for byte (streamed and not); each call is recorded; the server stays up', async () => {
    const up = await upstream((stream) =>
      stream ? { type: 'text/event-stream', body: STREAM } : { type: 'application/json', body: JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'hi' }], usage: USAGE }) },
    );
    const gw = await startGateway({ upstream: up, job: { token: TOKEN, id: 5, budgetMicros: 5_000_000 } });
    try {
      for (const stream of [false, true, false]) {
        const t0 = Date.now();
        const res = await gw.post('/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, stream, messages: [{ role: 'user', content: 'x' }] });
        const headersAt = Date.now() - t0;
        expect(res.status).toBe(200);
        // fetch gives header values as byte strings (one char per byte)
        expect(res.headers.get('x-region')).toBe(UTF8.toString('latin1'));
        expect(res.headers.get('x-name')).toBe(LATIN1_BYTE.toString('latin1'));
        expect(res.headers.get('x-plain')).toBe('ok');
        const text = await res.text();
        expect(text).toContain(stream ? 'message_stop' : '"hi"');
        // a stream's headers came before its events (the upstream sent them 50 ms apart)
        if (stream) expect(Date.now() - t0 - headersAt).toBeGreaterThanOrEqual(30);
      }
      // 100 input × 3 µ$ + 20 output × 15 µ$, each call
      await expect.poll(() => gw.store.calls.length, { timeout: 2_000 }).toBe(3);
      expect(gw.store.calls.map((c) => [c.streamed, c.usageKnown, c.costMicros])).toEqual([
        [false, true, 600],
        [true, true, 600],
        [false, true, 600],
      ]);
    } finally {
      await gw.close();
      await up.close();
    }
  });
});

describe('a reply with a header node refuses to write', () => {
  it('goes out without that header, the others kept (whole and streamed); the server answers the next request', async () => {
    const replies = [
      { status: 200, headers: { 'content-type': 'application/json', 'x-bad': 'a\u0001b', 'x-good': 'ok', 'bad name': 'v' }, body: Buffer.from('{"ok":true}') },
      {
        status: 200,
        headers: { 'content-type': 'text/event-stream', 'x-bad': 'line\nbreak', 'x-good': 'ok' },
        body: null,
        stream: (async function* () {
          yield Buffer.from('event: ping\ndata: {}\n\n');
        })(),
      },
    ];
    let i = 0;
    const server = await listenNode(nodeHandler(async () => replies[i++ % replies.length] as never, 1 << 20, silentLogger));
    try {
      for (const expected of ['{"ok":true}', 'event: ping\ndata: {}\n\n', '{"ok":true}']) {
        const res = await fetch(server.url + '/v1/messages', { method: 'POST', body: '{}' });
        expect(res.status).toBe(200);
        expect(res.headers.get('x-good')).toBe('ok');
        expect(res.headers.get('x-bad')).toBeNull();
        expect(await res.text()).toBe(expected);
      }
    } finally {
      await server.close();
    }
  });
});

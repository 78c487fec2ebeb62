// Fake Anthropic upstream for bench/gateway.bench.js (its own process). Prints its port.
// POST with stream:false → a JSON Messages reply at once; stream:true → 20 events 5 ms apart
// (chunked). Served over raw keep-alive TCP, not node:http: the upstream stands for a provider
// on other machines, so it should take as little as it can of the 2 cores the proxies under
// test run on (node:http cost ~50-80 µs of CPU per request here; at 10,000 requests/s that is
// most of the core the load generator also needs). The replies are encoded once; a request is
// read as its head (Content-Length or chunked body, as bench/lib/raw-http.js reads responses)
// and its body's `stream` field. BENCH_UPSTREAM=node serves the same replies through node:http.
import { Buffer } from 'node:buffer';
import { createServer } from 'node:http';
import net from 'node:net';

const reply = JSON.stringify({ id: 'msg_b', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 12, output_tokens: 3 } });
const ev = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
/** The stream's 20 events (the last one also carries message_stop). */
const events = Array.from({ length: 20 }, (_, i) =>
  i === 0
    ? ev('message_start', { message: { id: 'msg_s', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content: [], usage: { input_tokens: 12, output_tokens: 1 } } })
    : i < 19
      ? ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `tok${i} ` } })
      : ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 18 } }) + ev('message_stop', {}),
);
const isStream = (body) => {
  try {
    return JSON.parse(body).stream === true;
  } catch {
    return false; // HEAD or junk
  }
};

function nodeServer() {
  return createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (!isStream(body)) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) });
        res.end(reply);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      let i = 0;
      const send = () => {
        if (i === 19) return void res.end(events[i]);
        res.write(events[i++]);
        setTimeout(send, 5);
      };
      send();
    });
  });
}

const jsonReply = Buffer.from(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(reply)}\r\nconnection: keep-alive\r\n\r\n${reply}`, 'latin1');
const streamHead = Buffer.from('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n', 'latin1');
const chunks = events.map((e, i) => Buffer.from(`${Buffer.byteLength(e).toString(16)}\r\n${e}\r\n${i === 19 ? '0\r\n\r\n' : ''}`));

/**
 * Where the request that starts at `buf[0]` ends and its body: `{ total, body }`, or null when
 * more bytes are needed. A request with neither Content-Length nor chunked has no body.
 */
function parseRequest(buf) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const head = buf.toString('latin1', 0, end);
  const len = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (len) {
    const total = end + 4 + Number(len[1]);
    return buf.length >= total ? { total, body: buf.toString('utf8', end + 4, total) } : null;
  }
  if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) return { total: end + 4, body: '' };
  let at = end + 4;
  const parts = [];
  for (;;) {
    const nl = buf.indexOf('\r\n', at);
    if (nl < 0) return null;
    const size = parseInt(buf.toString('latin1', at, nl), 16);
    if (buf.length < nl + 2 + size + 2) return null;
    parts.push(buf.toString('utf8', nl + 2, nl + 2 + size));
    at = nl + 2 + size + 2;
    if (size === 0) return { total: at, body: parts.join('') };
  }
}

function rawServer() {
  return net.createServer((socket) => {
    socket.setNoDelay(true);
    let buf = Buffer.alloc(0);
    let streaming = false; // one response at a time: a pipelined request waits for the stream's end
    const serve = () => {
      while (!streaming) {
        const req = parseRequest(buf);
        if (!req) return;
        buf = buf.subarray(req.total);
        if (!isStream(req.body)) {
          socket.write(jsonReply);
          continue;
        }
        streaming = true;
        socket.write(streamHead);
        let i = 0;
        const send = () => {
          if (socket.destroyed) return;
          socket.write(chunks[i]);
          if (++i < 20) return void setTimeout(send, 5);
          streaming = false;
          serve();
        };
        send();
      }
    };
    socket.on('data', (chunk) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      serve();
    });
    socket.on('error', () => socket.destroy());
  });
}

const server = process.env.BENCH_UPSTREAM === 'node' ? nodeServer() : rawServer();
if (process.env.BENCH_UPSTREAM === 'node') server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));

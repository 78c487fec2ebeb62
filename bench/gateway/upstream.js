// Fake Anthropic upstream for bench/gateway.bench.js (its own process). Prints its port.
// POST with stream:false → a JSON Messages reply at once; stream:true → 20 events 5 ms apart.
import { Buffer } from 'node:buffer';
import { createServer } from 'node:http';

const reply = JSON.stringify({ id: 'msg_b', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 12, output_tokens: 3 } });
const ev = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    let stream = false;
    try {
      stream = JSON.parse(body).stream === true;
    } catch {
      /* HEAD or junk */
    }
    if (!stream) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) });
      res.end(reply);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let i = 0;
    const send = () => {
      if (i === 0) res.write(ev('message_start', { message: { id: 'msg_s', type: 'message', role: 'assistant', model: 'claude-haiku-4-5', content: [], usage: { input_tokens: 12, output_tokens: 1 } } }));
      else if (i < 19) res.write(ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `tok${i} ` } }));
      else {
        res.end(ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 18 } }) + ev('message_stop', {}));
        return;
      }
      i++;
      setTimeout(send, 5);
    };
    send();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));

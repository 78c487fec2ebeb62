// Raw keep-alive HTTP/1.1 client connections for the benchmarks' load generators
// (bench/gateway/raw-load.js, bench/webhooks/load.js). Cheap by design, like wrk: the caller
// encodes each request to bytes once; a connection writes one and reads its response (status
// line, then a Content-Length or chunked body) before the next. A node:http client or fetch
// costs the load generator 30-300 µs of CPU per request here, on the same 2 cores as the server
// it measures.
import net from 'node:net';

/**
 * Where the response that starts at `buf[0]` ends: its total length in bytes, or -1 when more
 * bytes are needed. Handles Content-Length and chunked bodies (Portkey's Hono server sends
 * chunked). @throws on a response with neither.
 */
function responseEnd(buf) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return -1;
  const head = buf.toString('latin1', 0, end);
  const len = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (len) {
    const total = end + 4 + Number(len[1]);
    return buf.length >= total ? total : -1;
  }
  if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) throw new Error(`response without a length: ${head.split('\r\n')[0]}`);
  let at = end + 4;
  for (;;) {
    const nl = buf.indexOf('\r\n', at);
    if (nl < 0) return -1;
    const size = parseInt(buf.toString('latin1', at, nl), 16);
    at = nl + 2 + size + 2;
    if (buf.length < at) return -1;
    if (size === 0) return at;
  }
}

/**
 * One keep-alive connection to host:port: `send(bytes)` resolves with the status code once the
 * whole response is in; rejects on a response without a length or a closed connection.
 */
export function connection(host, port) {
  const socket = net.connect(port, host);
  socket.setNoDelay(true);
  let buf = Buffer.alloc(0);
  let done = null;
  let fail = null;
  socket.on('data', (chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    if (!done) return;
    let total;
    try {
      total = responseEnd(buf);
    } catch (e) {
      return fail(e);
    }
    if (total < 0) return;
    const status = Number(buf.toString('latin1', 9, 12));
    buf = buf.subarray(total);
    const d = done;
    done = fail = null;
    d(status);
  });
  const closed = (e) => fail?.(e ?? new Error('connection closed'));
  socket.on('error', closed);
  socket.on('close', () => closed());
  return {
    send: (bytes) =>
      new Promise((resolve, reject) => {
        done = resolve;
        fail = reject;
        socket.write(bytes);
      }),
    close: () => socket.destroy(),
  };
}


import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect, createServer as createTcpServer } from 'node:net';

/** One request a {@link fakeUpstream} received. */
export interface SeenRequest {
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What a {@link fakeUpstream} answers: status (default 200), headers, and the body whole (text or bytes, e.g. gzip) or as chunks (SSE). */
export interface FakeReply {
  status?: number;
  headers?: Record<string, string>;
  body: string | Uint8Array | string[];
}

/**
 * What a {@link fakeUpstream}'s `reply` gives for a request: a {@link FakeReply}; a promise of
 * one (the request is held until it settles: calls kept in flight); or a function that answers
 * on the raw response itself (a stream that never ends, a connection cut mid-body, no answer).
 */
export type FakeAnswer = FakeReply | Promise<FakeReply> | ((res: ServerResponse) => void);

/**
 * A {@link fakeUpstream} answer for any of the three wire formats, chosen by the request's path:
 * a whole Messages, Responses or Chat Completions reply with 10 input and 2 output tokens.
 */
export function replyByWireFormat(r: SeenRequest): FakeReply {
  if (r.url.startsWith('/v1/messages')) return { body: JSON.stringify({ id: 'm', type: 'message', role: 'assistant', model: 'x', content: [], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } }) };
  if (r.url.endsWith('/responses')) return { body: JSON.stringify({ id: 'r', object: 'response', status: 'completed', model: 'x', output: [], usage: { input_tokens: 10, output_tokens: 2 } }) };
  return { body: JSON.stringify({ id: 'c', object: 'chat.completion', model: 'x', choices: [], usage: { prompt_tokens: 10, completion_tokens: 2 } }) };
}

/** A running fake model provider: its base URL, every request it received (`seen`), and a close(). */
export interface FakeUpstream {
  url: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

/**
 * A fake model provider for tests on 127.0.0.1: records every request (`seen`, bodies as text,
 * once read whole) and answers with `reply(request)`. `close()` stops it, cutting open connections.
 */
export async function fakeUpstream(reply: (req: SeenRequest) => FakeAnswer): Promise<FakeUpstream> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: SeenRequest = { url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      seen.push(r);
      const send = (out: FakeReply) => {
        res.writeHead(out.status ?? 200, out.headers ?? { 'content-type': 'application/json' });
        if (!Array.isArray(out.body)) return void res.end(out.body);
        for (const c of out.body) res.write(c);
        res.end();
      };
      const answer = reply(r);
      if (typeof answer === 'function') answer(res);
      else if (answer instanceof Promise) void answer.then(send);
      else send(answer);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A {@link fakeUpstream} that holds every request until `release()`, then answers each with `reply`: calls kept in flight. */
export async function heldUpstream(reply: FakeReply): Promise<FakeUpstream & { release(): void }> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const up = await fakeUpstream(() => released.then(() => reply));
  return { ...up, release };
}

/** An upstream that is down: the URL of a port just freed (nobody listens there); `seen` stays empty. */
export async function deadUpstream(): Promise<FakeUpstream> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
  await new Promise<void>((r) => probe.close(() => r()));
  return { url, seen: [], close: async () => undefined };
}

/** The content of a request's first message (Anthropic and Chat bodies): what the fakes of these tests choose their answer by. */
export function firstMessage(req: SeenRequest): string {
  return String((JSON.parse(req.body) as { messages?: Array<{ content: unknown }> }).messages?.[0]?.content);
}

/** A raw HTTP reply as read off the socket: status, lower-case headers, body text. */
export interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends `POST path` over a raw TCP socket with `headers` (a `content-length` among them may
 * declare more than is sent) and only `bodyPart`, then waits for a whole reply (by its
 * content-length) WITHOUT sending the rest. Rejects when none came within `timeoutMs`.
 */
export function rawPost(baseUrl: string, path: string, headers: Record<string, string>, bodyPart: string | Buffer, timeoutMs = 3000): Promise<RawReply> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), hostname);
    let got = Buffer.alloc(0);
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no reply within ${timeoutMs} ms`));
    }, timeoutMs);
    const tryParse = (): boolean => {
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return false;
      const [statusLine, ...lines] = got.subarray(0, end).toString('latin1').split('\r\n');
      const h: Record<string, string> = {};
      for (const l of lines) {
        const i = l.indexOf(':');
        h[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      const len = Number(h['content-length'] ?? 0);
      if (got.length < end + 4 + len) return false;
      clearTimeout(timer);
      sock.destroy();
      resolve({ status: Number(statusLine!.split(' ')[1]), headers: h, body: got.subarray(end + 4, end + 4 + len).toString('utf8') });
      return true;
    };
    sock.on('data', (c: Buffer) => {
      got = Buffer.concat([got, c]);
      tryParse();
    });
    // a reset after the reply (the server closed with body bytes unread) is fine
    sock.on('error', () => undefined);
    sock.on('close', () => {
      if (!tryParse()) {
        clearTimeout(timer);
        reject(new Error(`connection closed without a whole reply: ${JSON.stringify(got.toString('latin1').slice(0, 200))}`));
      }
    });
    const head = `POST ${path} HTTP/1.1\r\nhost: ${hostname}:${port}\r\n` + Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('') + '\r\n';
    sock.write(head);
    sock.write(bodyPart);
  });
}

/**
 * A fake model provider over raw TCP, for replies node:http cannot send (header bytes past
 * ASCII, a malformed head, a stray 100 Continue, a connection closed with no reply): once a
 * request has come whole (head and `content-length` body), `answer(socket, body)` writes what it
 * likes on the socket, or closes it. `count()`: the requests received; `seen` stays empty.
 */
export async function rawUpstream(answer: (socket: Socket, body: string) => void): Promise<FakeUpstream & { count(): number }> {
  let count = 0;
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: *(\d+)/i.exec(buf.subarray(0, end).toString('latin1'))?.[1] ?? 0);
      if (buf.length < end + 4 + length) return;
      const body = buf.subarray(end + 4, end + 4 + length).toString('utf8');
      buf = buf.subarray(end + 4 + length);
      count += 1;
      answer(socket, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen: [],
    count: () => count,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/**
 * Reads a reply's stream until the text read so far holds `marker` (an event the test waits
 * for). @returns that text. @throws Error when the stream ends first.
 */
export async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, marker: string): Promise<string> {
  let text = '';
  while (!text.includes(marker)) {
    const n = await reader.read();
    if (n.done) throw new Error(`the stream ended before ${JSON.stringify(marker)}`);
    text += Buffer.from(n.value).toString();
  }
  return text;
}

/**
 * Reads a reply's stream to its end — an error counts as one (a stream the gateway cut) —,
 * cancelling it after `giveUpMs` (a stream that would never end otherwise, so the test's own
 * timing check fails instead of the test hanging). @returns how it ended.
 */
export async function readToEnd(reader: ReadableStreamDefaultReader<Uint8Array>, giveUpMs: number): Promise<'done' | 'cut'> {
  const giveUp = setTimeout(() => void reader.cancel(), giveUpMs);
  try {
    for (;;) if ((await reader.read()).done) return 'done';
  } catch {
    return 'cut';
  } finally {
    clearTimeout(giveUp);
  }
}

/**
 * A raw HTTP/1.1 request to `url`: `head` lines after the request line, then `feed(write)` sends
 * body bytes as it likes. Resolves with what came back and when (ms after sending the head): the
 * first byte and the close.
 */
export function rawRequest(url: string, requestLine: string, head: string[], feed: (write: (b: Buffer | string) => boolean, done: () => boolean) => void): Promise<{ text: string; firstMs: number; closedMs: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const sock = connect(Number(port), hostname);
    const t0 = Date.now();
    let text = '';
    let firstMs = -1;
    let closed = false;
    sock.on('data', (c: Buffer) => {
      if (firstMs < 0) firstMs = Date.now() - t0;
      text += c.toString('latin1');
    });
    sock.on('error', () => undefined);
    sock.on('close', () => {
      closed = true;
      resolve({ text, firstMs, closedMs: Date.now() - t0 });
    });
    sock.write(`${requestLine}\r\nhost: ${hostname}:${port}\r\n${head.map((h) => h + '\r\n').join('')}\r\n`);
    feed((b) => !closed && sock.write(b), () => closed);
  });
}

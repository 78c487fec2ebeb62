import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FlotillaClient } from './client.js';
import { ApiError } from './errors.js';
import type { Job, JobEvent } from '../protocol/index.js';

const TOKEN = 'fla_test_token_abcdefghijklmnop';

function job(id: number, over: Partial<Job> = {}): Job {
  return {
    id,
    parentId: null,
    rootId: id,
    agent: 'test-fixer',
    agentVersion: '1',
    input: { repo: 'examples/calc' },
    status: 'queued',
    endReason: null,
    error: null,
    priority: 0,
    selector: {},
    runnerId: null,
    attempt: 0,
    budgetMicros: 1_000_000,
    sessionId: null,
    result: null,
    createdAt: '2026-11-30T12:00:00.000Z',
    assignedAt: null,
    startedAt: null,
    finishedAt: null,
    ...over,
  };
}

function ev(seq: number, jobId = 5): JobEvent {
  return { seq, jobId, at: '2026-11-30T12:00:00.000Z', type: 'message', data: { role: 'assistant', text: `event ${seq}` } };
}

function sseFrame(e: JobEvent): string {
  return `id: ${e.seq}\nevent: job\ndata: ${JSON.stringify(e)}\n\n`;
}

async function body(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

function send(res: ServerResponse, status: number, value: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/** What the fake server saw: requests (method, url, headers of interest, body). */
const seen: Array<{ method: string; url: string; lastEventId?: string; body?: string }> = [];
let eventsConnections = 0;
const lastSeen = (pred: (s: (typeof seen)[number]) => boolean) => [...seen].reverse().find(pred);
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const b = req.method === 'POST' ? await body(req) : undefined;
    seen.push({ method: req.method ?? '', url: req.url ?? '', lastEventId: req.headers['last-event-id'] as string | undefined, body: b });
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      return send(res, 401, { error: { code: 'unauthorized', message: 'missing or invalid API token' } });
    }
    const u = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'POST' && u.pathname === '/api/jobs') {
      const parsed = JSON.parse(b ?? '{}') as { agent: string; input: Record<string, unknown> };
      if (parsed.agent !== 'test-fixer') return send(res, 404, { error: { code: 'unknown_agent', message: `no agent named "${parsed.agent}"`, field: 'agent' } });
      return send(res, 201, job(5, { input: parsed.input }));
    }
    if (req.method === 'GET' && u.pathname === '/api/jobs') return send(res, 200, { jobs: [job(2), job(1)], nextCursor: null });
    if (req.method === 'GET' && u.pathname === '/api/jobs/5') {
      return send(res, 200, job(5, { status: 'succeeded', usage: { inputTokens: 10, outputTokens: 20, cacheReadTokens: 30, cacheWriteTokens: 40, modelCalls: 2, costMicros: 1234, estimatedCalls: 0 } }));
    }
    if (req.method === 'GET' && u.pathname === '/api/jobs/6') return send(res, 200, { id: 'six' });
    if (req.method === 'GET' && u.pathname === '/api/jobs/7') {
      res.writeHead(500, { 'content-type': 'text/plain' });
      return res.end('boom');
    }
    if (req.method === 'POST' && u.pathname === '/api/jobs/5/cancel') return send(res, 200, job(5, { status: 'cancelled', endReason: 'cancelled' }));
    if (req.method === 'POST' && u.pathname === '/api/jobs/9/cancel') return send(res, 409, { error: { code: 'not_cancellable', message: 'job 9 already succeeded' } });
    if (req.method === 'GET' && u.pathname === '/api/runners') {
      return send(res, 200, {
        runners: [{ id: 1, name: 'box', labels: { os: 'linux' }, status: 'online', capacity: 2, runningJobs: [], version: '0.1.0', lastHeartbeatAt: null, createdAt: '2026-11-30T12:00:00.000Z' }],
      });
    }
    if (req.method === 'GET' && u.pathname === '/api/agents') {
      return send(res, 200, { agents: [{ name: 'test-fixer', harness: 'claude-code', promptText: 'Fix it.' }] });
    }
    if (req.method === 'POST' && u.pathname === '/api/runner-tokens') return send(res, 201, { token: 'flr_abc', expiresAt: '2026-11-30T13:00:00.000Z' });
    if (req.method === 'GET' && u.pathname === '/api/jobs/5/events') {
      eventsConnections++;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      if (eventsConnections === 1) {
        // Events 1 and 2, written in awkward pieces (a frame split mid-field, CRLF), then the
        // connection dies before `end`.
        const text = ': hi\r\n\r\n' + sseFrame(ev(1)).replace(/\n/g, '\r\n') + sseFrame(ev(2));
        res.write(text.slice(0, 17));
        setTimeout(() => {
          res.write(text.slice(17));
          setTimeout(() => res.socket?.destroy(), 30);
        }, 30);
        return;
      }
      // Reconnect: replays from the given Last-Event-ID, with one duplicate the client must drop.
      res.write(sseFrame(ev(2)) + sseFrame(ev(3)) + 'event: end\ndata: {"status":"succeeded"}\n\n');
      return res.end();
    }
    if (req.method === 'GET' && u.pathname === '/api/jobs/8/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: 1\nevent: job\ndata: {"seq":1,"jobId":8,"at":"x","type":"nope"}\n\n');
      return; // left open: the client must throw on the bad event, not hang
    }
    if (req.method === 'GET' && u.pathname === '/api/jobs/10/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sseFrame(ev(1, 10))); // then stays open forever
      return;
    }
    if (req.method === 'GET' && u.pathname === '/api/jobs/12/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return res.end(': nothing, then closed\n\n');
    }
    if (req.method === 'GET' && u.pathname === '/api/jobs/11/events') return send(res, 200, { not: 'a stream' });
    send(res, 404, { error: { code: 'not_found', message: `no route ${req.method} ${u.pathname}` } });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

describe('FlotillaClient', () => {
  const client = () => new FlotillaClient({ url, token: TOKEN, reconnectDelayMs: 20 });

  it('creates a job with a JSON body and the bearer token', async () => {
    const j = await client().createJob({ agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 1 });
    expect(j.id).toBe(5);
    expect(j.input).toEqual({ repo: 'examples/calc' });
    const req = lastSeen((s) => s.method === 'POST' && s.url === '/api/jobs');
    expect(JSON.parse(req?.body ?? '')).toEqual({ agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 1 });
  });

  it('turns an error body into ApiError with status, code, message and field', async () => {
    const err = await client().createJob({ agent: 'nope' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 404, code: 'unknown_agent', message: 'no agent named "nope"', field: 'agent' });
  });

  it('401 with a wrong token, and the token is not in the message', async () => {
    const err = (await new FlotillaClient({ url, token: 'fla_wrong_secret_value' }).listRunners().catch((e: unknown) => e)) as ApiError;
    expect(err.status).toBe(401);
    expect(err.code).toBe('unauthorized');
    expect(err.message).not.toContain('fla_wrong_secret_value');
  });

  it('gets a job with usage, lists jobs with query parameters, cancels', async () => {
    const j = await client().getJob(5);
    expect(j.usage?.costMicros).toBe(1234);
    const list = await client().listJobs({ status: 'queued', agent: 'test-fixer', limit: 2, before: 10 });
    expect(list.jobs.map((x) => x.id)).toEqual([2, 1]);
    expect(lastSeen((s) => s.url.startsWith('/api/jobs?'))?.url).toBe('/api/jobs?status=queued&agent=test-fixer&limit=2&before=10');
    expect((await client().cancelJob(5)).status).toBe('cancelled');
    await expect(client().cancelJob(9)).rejects.toMatchObject({ status: 409, code: 'not_cancellable' });
  });

  it('lists runners and agents (agent defaults filled by the schema), creates a runner token', async () => {
    const runners = await client().listRunners();
    expect(runners[0]).toMatchObject({ name: 'box', labels: { os: 'linux' }, capacity: 2 });
    const agents = await client().listAgents();
    expect(agents[0]).toMatchObject({ name: 'test-fixer', model: 'claude-sonnet-4-5', limits: { maxTurns: 50 } });
    const t = await client().createRunnerToken({ labels: { os: 'linux' } });
    expect(t.token).toBe('flr_abc');
    expect(JSON.parse(lastSeen((s) => s.url === '/api/runner-tokens')?.body ?? '')).toEqual({ labels: { os: 'linux' } });
  });

  it('rejects a reply that does not match the protocol, naming the field', async () => {
    await expect(client().getJob(6)).rejects.toMatchObject({ code: 'bad_response', message: expect.stringContaining('id:') });
  });

  it('reports a non-JSON error reply with its status', async () => {
    await expect(client().getJob(7)).rejects.toMatchObject({ status: 500, code: 'http_500', message: expect.stringContaining('boom') });
  });

  it('reports an unreachable server as a network error', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const err = (await new FlotillaClient({ url: `http://127.0.0.1:${port}`, token: TOKEN }).getJob(1).catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe('network');
    expect(err.status).toBe(0);
    expect(err.message).toContain(`127.0.0.1:${port}`);
  });

  it('follows events, reconnects with Last-Event-ID after a drop, drops duplicates, ends at end', async () => {
    let endStatus = '';
    const got: number[] = [];
    for await (const e of client().followEvents(5, { onEnd: (s) => (endStatus = s) })) got.push(e.seq);
    expect(got).toEqual([1, 2, 3]);
    expect(endStatus).toBe('succeeded');
    const conns = seen.filter((s) => s.url === '/api/jobs/5/events');
    expect(conns.map((c) => c.lastEventId)).toEqual([undefined, '2']);
  });

  it('throws on an event that fails the schema', async () => {
    const it = client().followEvents(8);
    await expect(it.next()).rejects.toMatchObject({ code: 'bad_response' });
  });

  it('stops quietly when the signal aborts', async () => {
    const ac = new AbortController();
    const got: number[] = [];
    for await (const e of client().followEvents(10, { signal: ac.signal })) {
      got.push(e.seq);
      setTimeout(() => ac.abort(), 20);
    }
    expect(got).toEqual([1]);
  });

  it('gives up after maxReconnects drops in a row without an event', async () => {
    const c = new FlotillaClient({ url, token: TOKEN, reconnectDelayMs: 5, maxReconnects: 2 });
    await expect(c.followEvents(12).next()).rejects.toMatchObject({ code: 'network', message: expect.stringContaining('3 tries') });
    expect(seen.filter((s) => s.url === '/api/jobs/12/events')).toHaveLength(3);
  });

  it('refuses a 200 reply that is not an event stream', async () => {
    await expect(client().followEvents(11).next()).rejects.toMatchObject({ code: 'bad_response', message: expect.stringContaining('application/json') });
  });

  it('throws at once on an error reply to the event stream', async () => {
    await expect(client().followEvents(404).next()).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });

  it('refuses bad constructor input and bad job ids', () => {
    expect(() => new FlotillaClient({ url: 'ftp://x', token: TOKEN })).toThrow(/http/);
    expect(() => new FlotillaClient({ url: 'not a url', token: TOKEN })).toThrow(/not a valid URL/);
    return expect(client().getJob(-1)).rejects.toMatchObject({ field: 'id' });
  });
});

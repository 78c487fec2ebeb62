import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { silentLogger } from '../core/log.js';
import { Session, SessionEndedError, CLOSE_CREDENTIAL_IN_USE, CLOSE_REVOKED } from './session.js';
import { Lease } from './lease.js';

describe('session against a server', () => {
  let server: Server | null = null;
  afterEach(async () => {
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = null;
  });

  const hello = () => ({ type: 'hello' as const, name: 'r', labels: {}, capacity: 1, version: 't', running: [] });

  it('answers "busy, retry after" (503 + Retry-After) by waiting that long before the next try', async () => {
    const wss = new WebSocketServer({ noServer: true });
    const tries: number[] = [];
    server = createServer();
    server.on('upgrade', (req, socket, head) => {
      tries.push(Date.now());
      if (tries.length === 1) {
        socket.end('HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.on('message', () => ws.send(JSON.stringify({ type: 'welcome', runnerId: 7, heartbeatIntervalMs: 1000, serverTime: new Date().toISOString() })));
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const s = new Session({ serverUrl: url, credential: 'flc_x', hello, running: () => [], onWelcome: () => {}, onMessage: () => {}, reconnect: { minMs: 10, maxMs: 20 }, log: silentLogger });
    const w = await s.start(5000);
    expect(w.runnerId).toBe(7);
    expect(tries.length).toBe(2);
    // Retry-After 1 → between 1 and 2 seconds, not the 10–20 ms backoff.
    expect(tries[1]! - tries[0]!).toBeGreaterThanOrEqual(1000);
    expect(tries[1]! - tries[0]!).toBeLessThan(2500);
    await s.close();
    wss.close();
  });

  it('a runner with a running job reconnects before its lease runs out, however long its drawn wait (server restart)', async () => {
    const wss = new WebSocketServer({ noServer: true });
    const welcomes: number[] = [];
    let refuseUntil = 0;
    server = createServer();
    server.on('upgrade', (req, socket, head) => {
      if (Date.now() < refuseUntil) return socket.destroy(); // restarting
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.on('message', (data) => {
          if ((JSON.parse(data.toString()) as { type: string }).type !== 'hello') return;
          welcomes.push(Date.now());
          ws.send(JSON.stringify({ type: 'welcome', runnerId: 7, heartbeatIntervalMs: 500, heartbeatTimeoutMs: 3000, serverTime: new Date().toISOString() }));
          if (welcomes.length === 1) {
            // The server goes away for 300 ms right after the first welcome.
            setTimeout(() => {
              refuseUntil = Date.now() + 300;
              ws.terminate();
            }, 50);
          }
        });
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // T = 3 s, grace 0: the lease stops the job 2.7 s after the last confirmation.
    const lease = new Lease({ graceMs: 0, log: silentLogger, onExpire: () => undefined });
    // A reconnect drawn from a 10-minute window: without the lease's bound, it waits minutes.
    const s = new Session({ serverUrl: url, credential: 'flc_x', hello, running: () => [{ jobId: 1, attempt: 1 }], onWelcome: () => {}, onMessage: () => {}, reconnect: { minMs: 10, maxMs: 600_000, spreadMs: 600_000 }, lease, log: silentLogger });
    await s.start(5000);
    const t0 = welcomes[0]!;
    await expect.poll(() => welcomes.length, { timeout: 4000, interval: 20 }).toBe(2);
    // Back before the lease ran out (2.7 s), about 1 s before it.
    expect(welcomes[1]! - t0).toBeLessThan(2700);
    expect(lease.expired).toBe(false);
    await s.close();
    lease.close();
    wss.close();
  });

  it('stops for good when the server closes with "revoked" (4403)', async () => {
    const wss = new WebSocketServer({ noServer: true });
    let upgrades = 0;
    server = createServer();
    server.on('upgrade', (req, socket, head) => {
      upgrades++;
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.on('message', () => {
          ws.send(JSON.stringify({ type: 'welcome', runnerId: 7, heartbeatIntervalMs: 1000, serverTime: new Date().toISOString() }));
          setTimeout(() => ws.close(CLOSE_REVOKED, 'runner revoked'), 50);
        });
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    let revoked = '';
    const s = new Session({ serverUrl: url, credential: 'flc_x', hello, running: () => [], onWelcome: () => {}, onMessage: () => {}, onRevoked: (r) => (revoked = r), reconnect: { minMs: 10, maxMs: 20 }, log: silentLogger });
    await s.start(5000);
    await new Promise((r) => setTimeout(r, 400));
    expect(revoked).toBe('runner revoked');
    expect(upgrades).toBe(1);
    expect(s.ready).toBe(false);
    await s.close();
    wss.close();
  });

  it('stops for good when revoked while away: the connection drops, the next upgrade is refused 401 runner_revoked (it retried every few seconds for ever)', async () => {
    const wss = new WebSocketServer({ noServer: true });
    let upgrades = 0;
    server = createServer();
    server.on('upgrade', (req, socket, head) => {
      upgrades++;
      if (upgrades > 1) {
        // as hub.ts answers a revoked runner's credential
        const body = JSON.stringify({ error: { code: 'runner_revoked', message: 'runner revoked: register it again with a new registration token' } });
        socket.end(`HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.on('message', () => {
          ws.send(JSON.stringify({ type: 'welcome', runnerId: 7, heartbeatIntervalMs: 1000, serverTime: new Date().toISOString() }));
          setTimeout(() => ws.terminate(), 50); // dropped, no close frame (1006): the runner was away
        });
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    let revoked = '';
    let ended: SessionEndedError | null = null;
    const s = new Session({ serverUrl: url, credential: 'flc_x', hello, running: () => [], onWelcome: () => {}, onMessage: () => {}, onRevoked: (r) => (revoked = r), onEnded: (e) => (ended = e), reconnect: { minMs: 10, maxMs: 20 }, log: silentLogger });
    await s.start(5000);
    await new Promise((r) => setTimeout(r, 600));
    expect(upgrades).toBe(2); // one reconnect, refused, and no more
    expect(revoked).toBe('runner revoked: register it again with a new registration token');
    expect(ended).toBeInstanceOf(SessionEndedError);
    expect(ended!.code).toBe(CLOSE_REVOKED);
    expect(ended!.message).toBe(`server ${url} revoked this runner (HTTP 401 when it reconnected: runner revoked: register it again with a new registration token)`);
    await s.close();
    wss.close();
  });

  /** A server that refuses every hello as a second process (error frame, close 4409), after a `welcome` when `welcomeFirst`; counts upgrades. */
  const refusingServer = async (welcomeFirst: boolean) => {
    const wss = new WebSocketServer({ noServer: true });
    const seen = { upgrades: 0, hellos: [] as unknown[] };
    server = createServer();
    server.on('upgrade', (req, socket, head) => {
      seen.upgrades++;
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.on('message', (data) => {
          seen.hellos.push(JSON.parse(data.toString()));
          if (welcomeFirst) ws.send(JSON.stringify({ type: 'welcome', runnerId: 7, heartbeatIntervalMs: 1000, serverTime: new Date().toISOString() }));
          setTimeout(() => {
            ws.send(JSON.stringify({ type: 'error', message: 'another runner process is connected with this runner credential (runner r (id 7)); each runner process needs its own registration' }));
            ws.close(CLOSE_CREDENTIAL_IN_USE, 'runner credential in use by another runner process');
          }, welcomeFirst ? 50 : 0);
        });
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, wss };
  };

  it('credential in use (4409) before the welcome: start() fails at once with the server’s reason; no reconnect', async () => {
    const { url, seen, wss } = await refusingServer(false);
    const ended: SessionEndedError[] = [];
    const s = new Session({ serverUrl: url, credential: 'flc_x', hello, running: () => [], onWelcome: () => {}, onMessage: () => {}, onEnded: (e) => ended.push(e), reconnect: { minMs: 10, maxMs: 20 }, log: silentLogger });
    const t0 = Date.now();
    const err = (await s.start(5000).catch((e: unknown) => e)) as SessionEndedError;
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(err).toBeInstanceOf(SessionEndedError);
    expect(err.code).toBe(4409);
    expect(err.message).toBe(`server ${url} refused this runner process (close 4409): another runner process is connected with this runner credential (runner r (id 7)); each runner process needs its own registration`);
    expect(ended).toEqual([err]);
    await new Promise((r) => setTimeout(r, 200));
    expect(seen.upgrades).toBe(1);
    await s.close();
    wss.close();
  });

  it('credential in use (4409) after the welcome: onEnded with the reason, no reconnect', async () => {
    const { url, seen, wss } = await refusingServer(true);
    const ended: SessionEndedError[] = [];
    const s = new Session({ serverUrl: url, credential: 'flc_x', hello, running: () => [], onWelcome: () => {}, onMessage: () => {}, onEnded: (e) => ended.push(e), reconnect: { minMs: 10, maxMs: 20 }, log: silentLogger });
    await s.start(5000);
    await new Promise((r) => setTimeout(r, 400));
    expect(ended.map((e) => [e.code, e.message])).toEqual([[4409, expect.stringMatching(/refused this runner process \(close 4409\): another runner process is connected/)]]);
    expect(seen.upgrades).toBe(1);
    expect(s.ready).toBe(false);
    await s.close();
    wss.close();
  });
});

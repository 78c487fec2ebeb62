import { describe, expect, it } from 'vitest';
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isLoopbackUrl, resolveToken } from './options.js';

/** A local HTTP server answering every request with `reply` (null: the connection dropped), noting each request's path (without its query) and Authorization header. */
async function localServer(reply: (path: string, query: URLSearchParams) => { status: number; body: string } | null) {
  const seen: Array<{ path: string; auth: string | undefined }> = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    seen.push({ path: url.pathname, auth: req.headers.authorization });
    const r = reply(url.pathname, url.searchParams);
    if (r === null) return void req.socket.destroy();
    res.writeHead(r.status, { 'content-type': 'application/json' }).end(r.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

// The proof worked out here from its definition (core/tokens.ts): HMAC-SHA256 keyed by the token's SHA-256 hex over the label, a newline and the challenge.
const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const proofOf = (token: string, challenge: string) => createHmac('sha256', sha(token)).update(`flotilla admin-token proof\n${challenge}`, 'utf8').digest('hex');
/** A server that holds `token`: its /healthz answers the challenge. */
const holding = (token: string) => (_path: string, q: URLSearchParams) => ({ status: 200, body: JSON.stringify({ ok: true, store: 'sqlite', adminTokenProof: proofOf(token, q.get('adminTokenChallenge') ?? '') }) });

describe('API token resolution', () => {
  const data = mkdtempSync(join(tmpdir(), 'flotilla-token-'));
  writeFileSync(join(data, 'admin-token'), 'fla_local_admin_token_value\n');

  it('knows which servers are this machine', () => {
    expect(['http://127.0.0.1:8787', 'http://127.3.2.1', 'http://localhost:1', 'http://[::1]:8787'].map(isLoopbackUrl)).toEqual([true, true, true, true]);
    expect(['http://192.0.2.2:8787', 'http://build-1:8787', 'http://127.0.0.1.evil.example', 'not a url'].map(isLoopbackUrl)).toEqual([false, false, false, false]);
  });

  it('reads <data>/admin-token for a server on this machine that proves it holds it', async () => {
    const right = await localServer(holding('fla_local_admin_token_value'));
    try {
      expect(await resolveToken({ data }, right.url)).toBe('fla_local_admin_token_value');
    } finally {
      await right.close();
    }
  });

  it('never sends the local admin token to another host', async () => {
    await expect(resolveToken({ data }, 'http://192.0.2.2:18798')).rejects.toThrow(/no API token for http:\/\/192\.0\.2\.2:18798: pass --token or set FLOTILLA_TOKEN/);
  });

  it('sends it only to a server whose GET /healthz answers a fresh challenge with its proof (fresh-tester findings: a mistyped port got it; a fixed check could be copied)', async () => {
    let copied = '';
    const other = await localServer(() => ({ status: 200, body: '{"ok":true}' }));
    const wrong = await localServer(holding('fla_another_token'));
    const html = await localServer(() => ({ status: 404, body: '<html>' }));
    // replays the proof the real server gave to an earlier challenge
    const replay = await localServer(() => ({ status: 200, body: JSON.stringify({ ok: true, adminTokenProof: copied }) }));
    const right = await localServer((p, q) => {
      const r = holding('fla_local_admin_token_value')(p, q);
      copied = (JSON.parse(r.body) as { adminTokenProof: string }).adminTokenProof;
      return r;
    });
    try {
      expect(await resolveToken({ data }, right.url)).toBe('fla_local_admin_token_value');
      expect(right.seen).toEqual([{ path: '/healthz', auth: undefined }]);
      expect(copied).toMatch(/^[0-9a-f]{64}$/);
      for (const s of [other, wrong, html, replay]) {
        await expect(resolveToken({ data }, s.url + '/')).rejects.toThrow(
          `the server at ${s.url}/ did not prove that it holds the admin token in ${join(data, 'admin-token')} (its GET /healthz gave no matching adminTokenProof), so the token was not sent: it is another service on that port, a Flotilla server of another data folder, or one whose admin token was revoked; check --server / FLOTILLA_SERVER and --data / FLOTILLA_DATA, or pass --token / FLOTILLA_TOKEN`,
        );
        expect(s.seen).toEqual([{ path: '/healthz', auth: undefined }]);
      }
    } finally {
      await Promise.all([other, wrong, html, replay, right].map((s) => s.close()));
    }
  });

  it('a server that gives no answer to the challenge (the connection dropped, nothing listening) gets no token: the network error, the token unsent (fresh-tester finding: it was then sent)', async () => {
    const drops = await localServer(() => null);
    try {
      await expect(resolveToken({ data }, drops.url)).rejects.toMatchObject({ code: 'network', message: expect.stringMatching(new RegExp(`^cannot reach the Flotilla server at ${drops.url.replace(/\./g, '\\.')}: .+ \\(the admin token in .+admin-token was not sent\\)$`)) });
      expect(drops.seen).toEqual([{ path: '/healthz', auth: undefined }]);
    } finally {
      await drops.close();
    }
    await expect(resolveToken({ data }, drops.url)).rejects.toMatchObject({ code: 'network', message: expect.stringContaining('ECONNREFUSED') });
  });

  it('an explicit token wins everywhere', async () => {
    expect(await resolveToken({ data, token: ' fla_given ' }, 'http://192.0.2.2:1')).toBe('fla_given');
  });
});

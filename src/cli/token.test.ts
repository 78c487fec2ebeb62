import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isLoopbackUrl, resolveToken } from './options.js';

/** A local HTTP server answering every request with `reply` (JSON when an object), noting each request's path and Authorization header. */
async function localServer(reply: (path: string) => { status: number; body: string }) {
  const seen: Array<{ path: string; auth: string | undefined }> = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', auth: req.headers.authorization });
    const r = reply(req.url ?? '');
    res.writeHead(r.status, { 'content-type': 'application/json' }).end(r.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

// The check worked out here from its definition (core/tokens.ts): SHA-256 hex of the label, a newline and the token's SHA-256 hex.
const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const CHECK = sha(`flotilla admin-token check\n${sha('fla_local_admin_token_value')}`);

describe('API token resolution', () => {
  const data = mkdtempSync(join(tmpdir(), 'flotilla-token-'));
  writeFileSync(join(data, 'admin-token'), 'fla_local_admin_token_value\n');

  it('knows which servers are this machine', () => {
    expect(['http://127.0.0.1:8787', 'http://127.3.2.1', 'http://localhost:1', 'http://[::1]:8787'].map(isLoopbackUrl)).toEqual([true, true, true, true]);
    expect(['http://192.0.2.2:8787', 'http://build-1:8787', 'http://127.0.0.1.evil.example', 'not a url'].map(isLoopbackUrl)).toEqual([false, false, false, false]);
  });

  it('reads <data>/admin-token for a server on this machine', async () => {
    expect(await resolveToken({ data }, 'http://127.0.0.1:9999')).toBe('fla_local_admin_token_value');
  });

  it('never sends the local admin token to another host', async () => {
    await expect(resolveToken({ data }, 'http://192.0.2.2:18798')).rejects.toThrow(/no API token for http:\/\/192\.0\.2\.2:18798: pass --token or set FLOTILLA_TOKEN/);
  });

  it('sends it only to a server whose GET /healthz shows the check of that token (fresh-tester finding: a mistyped port got it)', async () => {
    const other = await localServer(() => ({ status: 200, body: '{"ok":true}' }));
    const wrong = await localServer(() => ({ status: 200, body: JSON.stringify({ ok: true, store: 'sqlite', adminTokenCheck: sha('another') }) }));
    const html = await localServer(() => ({ status: 404, body: '<html>' }));
    const right = await localServer(() => ({ status: 200, body: JSON.stringify({ ok: true, store: 'sqlite', adminTokenCheck: CHECK }) }));
    try {
      for (const s of [other, wrong, html]) {
        await expect(resolveToken({ data }, s.url + '/')).rejects.toThrow(
          `the server at ${s.url}/ did not show that it holds the admin token in ${join(data, 'admin-token')} (its GET /healthz gave no matching adminTokenCheck), so the token was not sent: it is another service on that port, a Flotilla server of another data folder, or one whose admin token was revoked; check --server / FLOTILLA_SERVER and --data / FLOTILLA_DATA, or pass --token / FLOTILLA_TOKEN`,
        );
        expect(s.seen).toEqual([{ path: '/healthz', auth: undefined }]);
      }
      expect(await resolveToken({ data }, right.url)).toBe('fla_local_admin_token_value');
      expect(right.seen).toEqual([{ path: '/healthz', auth: undefined }]);
    } finally {
      await Promise.all([other, wrong, html, right].map((s) => s.close()));
    }
  });

  it('an explicit token wins everywhere', async () => {
    expect(await resolveToken({ data, token: ' fla_given ' }, 'http://192.0.2.2:1')).toBe('fla_given');
  });
});

// `flotilla runners revoke` of `flotilla up`'s own runner: up stops (exit 1) naming the
// credential file to delete, as it does at its next start (with up's own advice there too). It kept serving with no runner, its
// queued jobs waiting for ever (fresh-tester finding).
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnFlotilla, tempDir, waitFor } from './helpers.js';

const dir = tempDir('flotilla-up-revoked-');

/** A port nothing listens on now (bound, then closed). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
afterAll(() => dir.cleanup());

describe('up: its local runner revoked', () => {
  it('up stops with exit 1, naming the credential file to delete', async () => {
    const data = join(dir.path, 'data');
    // one port for both starts: the stored credential is for this server's URL, so the second start presents it
    const port = await freePort();
    const up = spawnFlotilla(['up', '--data', data, '--port', String(port)], { FLOTILLA_LOG_LEVEL: 'error', DATABASE_URL: undefined });
    const exited = new Promise<number | null>((resolve) => up.on('exit', (c) => resolve(c)));
    try {
      const url = await waitFor('the server URL', () => /server on (http:\/\/\S+)/.exec(up.output())?.[1], 30_000);
      await waitFor('the local runner', () => up.output().includes('local runner 1 working'), 30_000);
      const token = readFileSync(join(data, 'admin-token'), 'utf8').trim();
      const res = await fetch(`${url}/api/runners/1/revoke`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      expect(await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 15_000))])).toBe(1);
      expect(up.output()).toContain(`flotilla: local runner stopped: server ${url} revoked this runner (close 4403: runner revoked); flotilla up stops with it. To run a local runner again: delete ${join(data, 'runner', 'secret', 'credential.json')} and start flotilla up again (or start it with --no-runner)`);
    } finally {
      up.kill('SIGKILL');
    }
    // started again on that folder: the same advice, not `flotilla runner`'s "start it with a new registration token" (up takes none: fresh-tester finding)
    const again = spawnFlotilla(['up', '--data', data, '--port', String(port)], { FLOTILLA_LOG_LEVEL: 'error', DATABASE_URL: undefined });
    const code = await new Promise<number | null>((resolve) => again.on('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(again.output()).toContain(`this data folder's local runner was revoked (flotilla runners revoke): it cannot connect again; to run a local runner again, delete ${join(data, 'runner', 'secret', 'credential.json')} and start flotilla up again (or start it with --no-runner)`);
  }, 60_000);
});

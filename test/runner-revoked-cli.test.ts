/**
 * A revoked `flotilla runner` stops with exit 1 and says every step of running the machine as
 * a runner again; following those steps as said (same work folder) works. Before, it said only
 * "register it again with a new registration token", which then failed: the revoked credential
 * was still in the work folder.
 */
import { rm } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import { recordingIO, runCli, waitFor } from '../src/cli/test-io.js';
import { startTestServer, type TestServer } from '../src/server/test-helpers.js';

let t: TestServer;
let dir: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  process.env.FLOTILLA_LOG_LEVEL = 'error';
  dir = await mkdtemp(join(tmpdir(), 'flotilla-revoked-'));
  t = await startTestServer({ heartbeatIntervalMs: 300, heartbeatTimeoutMs: 1500 });
});
afterAll(async () => {
  await t.close();
  await rm(dir, { recursive: true, force: true });
  process.env = { ...savedEnv };
});

describe('a revoked runner', () => {
  it('says the complete steps; following them with the same work folder, it runs again', async () => {
    const work = join(dir, 'work');
    const credential = join(work, 'secret', 'credential.json');
    const steps = `To run this machine as a runner again: delete ${credential}, make a new registration token with \`flotilla runners token create\`, then start \`flotilla runner --token <new token>\` again\n`;
    const io = recordingIO();
    const args = ['runner', '--server', t.url, '--work-dir', work, '--name', 'gone', '--repo-base', dir];
    const first = main(['node', 'flotilla', ...args, '--token', await t.regToken()], io);
    await waitFor(() => /runner \d+ connected/.test(io.out()), 'the runner to connect');
    const id = Number(/runner (\d+) connected/.exec(io.out())![1]);
    expect((await t.api(`/api/runners/${id}/revoke`, { json: {} })).status).toBe(200);
    expect(await first).toBe(1);
    expect(io.err()).toMatch(/^flotilla: runner stopped: server \S+ revoked this runner \(close 4403: runner revoked\)\. /m);
    expect(io.err().endsWith(steps)).toBe(true);

    // Started again as it was (no token): refused at once, with the same steps.
    const again = await runCli(args);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/^flotilla: server \S+ refused the runner credential \(HTTP 401\): runner revoked\. /);
    expect(again.err.endsWith(steps)).toBe(true);

    // The steps, as said: delete the credential, a new token, start again.
    await rm(credential);
    const io2 = recordingIO();
    const back = main(['node', 'flotilla', ...args, '--token', await t.regToken()], io2);
    await waitFor(() => /runner \d+ connected/.test(io2.out()) || io2.err() !== '', 'the runner to connect again');
    expect(io2.err()).toBe('');
    const newId = Number(/runner (\d+) connected/.exec(io2.out())![1]);
    expect(newId).not.toBe(id);
    io2.signals.emit('SIGTERM');
    expect(await back).toBe(0);
  }, 60_000);
});

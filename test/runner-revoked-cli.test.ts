/**
 * A revoked `flotilla runner` stops with exit 1 and says every step of running the machine as
 * a runner again; following those steps as said (same work folder) works: a new registration
 * token given with --token replaces the revoked credential (the command the dashboard's token
 * rotation prints; it failed while the revoked credential was in the work folder, and the
 * message said to delete it first). A spent token says both refusals.
 */
import { readFileSync } from 'node:fs';
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
    const steps = `To run this machine as a runner again: make a new registration token with \`flotilla runners token create\`, then start \`flotilla runner --token <new token>\` again (it replaces the revoked credential in ${credential})\n`;
    const io = recordingIO();
    const args = ['runner', '--server', t.url, '--work-dir', work, '--name', 'gone', '--repo-base', dir];
    const firstToken = await t.regToken();
    const first = main(['node', 'flotilla', ...args, '--token', firstToken], io);
    await waitFor(() => /runner \d+ connected/.test(io.out()), 'the runner to connect');
    const id = Number(/runner (\d+) connected/.exec(io.out())![1]);
    const revokedAt = Date.now();
    expect((await t.api(`/api/runners/${id}/revoke`, { json: {} })).status).toBe(200);
    expect(await first).toBe(1);
    // at once: no ack can come after the revoke, so none is waited for (it waited 5 s)
    expect(Date.now() - revokedAt).toBeLessThan(2500);
    expect(io.err()).toMatch(/^flotilla: runner stopped: server \S+ revoked this runner \(close 4403: runner revoked\)\. /m);
    expect(io.err().endsWith(steps)).toBe(true);

    // Started again as it was (no token): refused at once, with the same steps.
    const again = await runCli(args);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/^flotilla: server \S+ refused the runner credential \(HTTP 401\): runner revoked\. /);
    expect(again.err.endsWith(steps)).toBe(true);

    // Started again with the spent token (a unit file that keeps it): both refusals, what to do.
    const spent = await runCli([...args, '--token', firstToken]);
    expect(spent.code).toBe(1);
    expect(spent.err).toMatch(new RegExp(`^flotilla: runner ${id} was revoked on \\S+, and registering again with the token given failed: .+; create a new registration token \\(flotilla runners token create\\) and start the runner with it\\n$`));

    // The steps, as said: a new token, start again (the revoked credential is replaced).
    const io2 = recordingIO();
    const back = main(['node', 'flotilla', ...args, '--token', await t.regToken()], io2);
    await waitFor(() => /runner \d+ connected/.test(io2.out()) || io2.err() !== '', 'the runner to connect again');
    expect(io2.err()).toBe('');
    const newId = Number(/runner (\d+) connected/.exec(io2.out())![1]);
    expect(newId).not.toBe(id);
    expect((JSON.parse(readFileSync(credential, 'utf8')) as { runnerId: number }).runnerId).toBe(newId);
    io2.signals.emit('SIGTERM');
    expect(await back).toBe(0);
  }, 60_000);

  it('registered again without --name, it gets the name it had (not the host name)', async () => {
    const work = join(dir, 'work-named');
    const args = ['runner', '--server', t.url, '--work-dir', work, '--repo-base', dir];
    const io = recordingIO();
    const first = main(['node', 'flotilla', ...args, '--name', 'build-x', '--token', await t.regToken()], io);
    await waitFor(() => /runner \d+ connected/.test(io.out()), 'the runner to connect');
    const id = Number(/runner (\d+) connected/.exec(io.out())![1]);
    expect((await t.api(`/api/runners/${id}/revoke`, { json: {} })).status).toBe(200);
    expect(await first).toBe(1);
    const io2 = recordingIO();
    const back = main(['node', 'flotilla', ...args, '--token', await t.regToken()], io2);
    await waitFor(() => /runner \d+ connected/.test(io2.out()) || io2.err() !== '', 'the runner to connect again');
    const newId = Number(/runner (\d+) connected/.exec(io2.out())![1]);
    // the revoked runner freed its name: the new one has it
    expect(((await (await t.api(`/api/runners/${newId}`)).json()) as { runner: { name: string } }).runner.name).toBe('build-x');
    io2.signals.emit('SIGTERM');
    expect(await back).toBe(0);
  }, 60_000);
});

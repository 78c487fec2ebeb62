/**
 * Issue "never run a job twice", the reproduction: a runner's work folder (its credential)
 * copied to a second machine. Before, the two `flotilla runner` processes replaced each other
 * over and over and a job ran 3 times. Now the second one stops at once with the server's
 * reason and exit code 1; the first keeps its connection and its job runs exactly once. Both
 * runners are the real `flotilla runner` command (main() in this process) on a real server.
 */
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import { recordingIO, runCli } from '../src/cli/test-io.js';
import { SHIPPED_AGENTS, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import type { Job } from '../src/protocol/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: string, fn: () => Promise<T> | T, ok: (v: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await sleep(50);
  }
}

describe('one runner credential in two runner processes', () => {
  let dir: string;
  let t: TestServer;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-cred-in-use-'));
    const marker = join(dir, 'ran.txt');
    await mkdir(join(dir, 'agents', 'once'), { recursive: true });
    await writeFile(
      join(dir, 'agents', 'once', 'agent.yaml'),
      ['name: once', 'harness: command', `command: [sh, -c, ${JSON.stringify(`echo ran >> ${marker}; sleep 2`)}]`].join('\n'),
    );
    await writeFile(join(dir, 'agents', 'once', 'prompt.md'), 'once');
    t = await startTestServer({ agentsDirs: [SHIPPED_AGENTS, join(dir, 'agents')], dispatchIntervalMs: 100, heartbeatIntervalMs: 300, heartbeatTimeoutMs: 1500 });
  });
  afterAll(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the copy stops with the reason and exit code 1; the first keeps running its job, which runs once; a revoke stops the first with exit code 1', async () => {
    const w1 = join(dir, 'work-1');
    const io1 = recordingIO();
    const first = main(['node', 'flotilla', 'runner', '--server', t.url, '--token', await t.regToken(), '--work-dir', w1, '--name', 'twin', '--repo-base', dir], io1);
    await until('the first runner to connect', () => io1.out(), (o) => /runner \d+ connected/.test(o));
    const runnerId = Number(/runner (\d+) connected/.exec(io1.out())![1]);

    const res = await t.api('/api/jobs', { json: { agent: 'once', input: {} } });
    expect(res.status).toBe(201);
    const job = (await res.json()) as Job;
    await until('the job to run', async () => (await t.store.getJob(job.id))?.status, (s) => s === 'running');

    // The work folder copied to another machine: same credential, another process.
    const w2 = join(dir, 'work-2');
    await mkdir(w2, { recursive: true, mode: 0o700 });
    await cp(join(w1, 'secret'), join(w2, 'secret'), { recursive: true });
    const copy = await runCli(['runner', '--server', t.url, '--work-dir', w2, '--name', 'twin-copy', '--repo-base', dir]);
    expect(copy.code).toBe(1);
    expect(copy.err).toMatch(/refused this runner process \(close 4409\): another runner process is connected with this runner credential \(runner twin \(id \d+\), version \S+, connected since /);
    expect(copy.err).toContain('`flotilla runners token create`');
    // said once (it was printed three times: the error frame's warning, the log line, the CLI's line)
    expect(copy.err.split('another runner process is connected with this runner credential').length - 1).toBe(1);

    const done = await until('the job to end', async () => t.store.getJob(job.id), (j) => j !== null && !['queued', 'assigned', 'running'].includes(j.status));
    expect(done).toMatchObject({ status: 'succeeded', attempt: 1, runnerId });
    expect((await readFile(join(dir, 'ran.txt'), 'utf8')).trim().split('\n')).toEqual(['ran']);
    const history = (await t.store.listRunnerEvents(runnerId, 50)).map((e) => e.kind);
    expect(history.filter((k) => k === 'connected')).toHaveLength(1);
    expect(history).not.toContain('disconnected');
    expect((await t.store.getRunner(runnerId))?.connected).toBe(true);

    // Ended for good while running (here: revoked): the command stops, exit code 1, no reconnect loop.
    expect((await t.api(`/api/runners/${runnerId}/revoke`, { json: {} })).status).toBe(200);
    expect(await first).toBe(1);
    expect(io1.err()).toMatch(/flotilla: runner stopped: server \S+ revoked this runner \(close 4403: runner revoked\)/);
  }, 60_000);
});

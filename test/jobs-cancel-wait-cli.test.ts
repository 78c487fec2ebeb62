/**
 * `flotilla jobs cancel` on a job whose runner does not answer (frozen, cut off): it says on
 * stderr what it waits for while it waits (it waited ~20 s without a word: a fresh tester's
 * finding), then reports the end when the server gives the runner up. With --json stderr stays
 * empty. A real server, a fake runner on a real WebSocket that takes the job and then never
 * answers the cancel.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/test-io.js';
import { FakeRunner, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import type { Job } from '../src/protocol/index.js';

let t: TestServer;
const fakes: FakeRunner[] = [];
const savedEnv = { ...process.env };
const run = (...args: string[]) => runCli([...args, '--server', t.url, '--token', t.admin]);

beforeAll(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  // A silent runner is given up after 3 s of silence (the sweep runs every 200 ms).
  t = await startTestServer({ dispatchIntervalMs: 100, heartbeatIntervalMs: 500, heartbeatTimeoutMs: 3000, sweepIntervalMs: 200 });
});
afterAll(async () => {
  for (const f of fakes) await f.close();
  await t.close();
  process.env = { ...savedEnv };
});

async function jobOnSilentRunner(name: string): Promise<Job> {
  const r = await FakeRunner.start(t, { name });
  fakes.push(r);
  await r.hello({ name });
  const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' } } })).json()) as Job;
  await r.startJob(job.id, () => `s-${name}`);
  return job; // the fake sends no heartbeat from here on and never answers job.cancel
}

describe('jobs cancel on a runner that does not answer', () => {
  it('says what it waits for after 1 s, then reports the job ended when the runner is given up', async () => {
    const job = await jobOnSilentRunner('mute');
    const t0 = Date.now();
    const res = await run('jobs', 'cancel', String(job.id));
    const took = Date.now() - t0;
    expect(res.err.split('\n')[0]).toMatch(new RegExp(`^flotilla: job ${job.id} is cancelling: waiting for runner mute to report its processes gone \\(1 s; a runner that cannot be reached is given up after the server's heartbeat timeout\\)$`));
    expect(took).toBeGreaterThan(1000);
    // the end the server gave it: the runner went silent, so not `cancelled` by the runner
    const final = (await (await t.api(`/api/jobs/${job.id}`)).json()) as Job;
    // the server gave the silent runner up: the job the user asked to cancel is cancelled
    expect(final).toMatchObject({ status: 'cancelled', endReason: 'cancelled' });
    expect([res.code, res.out]).toEqual([0, `job ${job.id} cancelled\n`]);
  }, 30_000);

  it('with --json: nothing on stderr while it waits', async () => {
    const job = await jobOnSilentRunner('mute-json');
    const res = await run('jobs', 'cancel', String(job.id), '--json');
    expect(res.err).toBe('');
    expect((JSON.parse(res.out) as { job: Job }).job.id).toBe(job.id);
  }, 30_000);
});

/**
 * A job must never run on two runners at once (lease semantics, runner/lease.ts), over a real
 * server and real runners: runner A reaches the server through a TCP proxy that can stall (a
 * network partition); B is connected directly. The job (agent `marker`, `retries: 1`) appends
 * the time (epoch ms) to `<dir>/job-<id>-attempt-<n>.log` every 20 ms while it runs, so the
 * files show when each attempt's process was alive.
 * A third runner is a `flotilla runner` process, frozen with SIGSTOP (its job watchdog must act).
 * Server: heartbeat every 200 ms, timeout 1200 ms, sweep every 100 ms. Runner lease: stop
 * 840 ms after the last heartbeat the server provably heard, grace 240 ms, gone by 1080 ms.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RECONNECT_WINDOW_MS, type Job, type JobEvent } from '../src/protocol/index.js';
import { startRunner, type RunningRunner } from '../src/runner/runner.js';
import { startTestServer, type TestServer } from '../src/server/test-helpers.js';
import { TcpProxy } from './tcp-proxy.js';
import { spawnFlotilla, waitFor } from './helpers.js';

const TIMEOUT_MS = 1200;
const MARK = `import { appendFileSync } from 'node:fs';
let text = '';
for await (const c of process.stdin) text += c;
const { job, input } = JSON.parse(text);
const file = input.dir + '/job-' + job.id + '-attempt-' + job.attempt + '.log';
console.log(JSON.stringify({ type: 'message', data: { role: 'assistant', text: 'marking ' + file } }));
const end = Date.now() + input.seconds * 1000;
while (Date.now() < end) {
  appendFileSync(file, Date.now() + '\\n');
  await new Promise((r) => setTimeout(r, 20));
}
console.log(JSON.stringify({ type: 'result', data: { summary: 'marked' } }));
`;

describe('a job runs on one runner at a time', () => {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-lease-'));
  const marks = join(dir, 'marks');
  let t: TestServer;
  let proxy: TcpProxy;
  let runners: RunningRunner[] = [];

  beforeAll(async () => {
    mkdirSync(join(dir, 'agents', 'marker'), { recursive: true });
    mkdirSync(marks);
    writeFileSync(join(dir, 'agents', 'marker', 'mark.mjs'), MARK);
    writeFileSync(
      join(dir, 'agents', 'marker', 'agent.yaml'),
      ['name: marker', 'harness: command', 'command: [node, ./mark.mjs]', 'retries: 1', 'limits: { timeoutSeconds: 120 }', 'inputSchema: { type: object, properties: { seconds: { type: number }, dir: { type: string } } }'].join('\n'),
    );
    writeFileSync(join(dir, 'agents', 'marker', 'prompt.md'), 'mark');
    t = await startTestServer({ agentsDirs: [join(dir, 'agents')], heartbeatIntervalMs: 200, heartbeatTimeoutMs: TIMEOUT_MS, sweepIntervalMs: 100, dispatchIntervalMs: 100 });
  });
  afterEach(async () => {
    proxy?.heal();
    await Promise.all(runners.map((r) => r.stop()));
    runners = [];
    await proxy?.close();
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A runner named `name`, through the proxy (a new one) or directly. */
  const runner = async (name: string, viaProxy: boolean): Promise<RunningRunner> => {
    if (viaProxy) {
      const u = new URL(t.url);
      proxy = await new TcpProxy({ host: u.hostname, port: Number(u.port) }).listen();
    }
    const r = await startRunner({
      serverUrl: viaProxy ? proxy.url : t.url,
      registrationToken: await t.regToken(),
      workDir: join(dir, `work-${name}`),
      name,
      graceMs: 2000,
      reconnect: { minMs: 50, maxMs: 200 },
    });
    runners.push(r);
    return r;
  };
  const job = async (seconds: number): Promise<Job> => {
    const res = await t.api('/api/jobs', { json: { agent: 'marker', input: { seconds, dir: marks } } });
    expect(res.status).toBe(201);
    return (await res.json()) as Job;
  };
  const getJob = async (id: number) => (await (await t.api(`/api/jobs/${id}`)).json()) as Job;
  /** The times attempt `n` of job `id` wrote, ascending (empty: it never ran). */
  const marked = (id: number, n: number): number[] => {
    const f = `job-${id}-attempt-${n}.log`;
    if (!readdirSync(marks).includes(f)) return [];
    return readFileSync(join(marks, f), 'utf8').trim().split('\n').map(Number);
  };
  const statuses = async (id: number) => (await t.store.listEvents(id, 0, 1000)).filter((e: JobEvent) => e.type === 'status').map((e) => (e.type === 'status' ? `${e.data.status}: ${e.data.message ?? ''}` : ''));

  it('network cut: the attempt on the cut-off runner is gone before the server gives the job to another runner', async () => {
    const a = await runner('lease-a', true);
    const j = await job(5);
    await waitFor('the job to run on a', async () => (await getJob(j.id)).status === 'running' && marked(j.id, 1).length > 5, 30_000, 50);
    expect((await getJob(j.id)).runnerId).toBe(a.runnerId);
    const b = await runner('lease-b', false);
    proxy.stall();
    const done = await waitFor('the job to end', async () => {
      const now = await getJob(j.id);
      return ['succeeded', 'failed', 'lost', 'cancelled'].includes(now.status) ? now : null;
    }, 30_000, 50);
    // What the server last heard from a, read before the network heals.
    const heardA = (await t.store.getRunner(a.runnerId))?.lastHeartbeatAt ?? 0;
    expect(done).toMatchObject({ status: 'succeeded', attempt: 2, runnerId: b.runnerId });
    const first = marked(j.id, 1);
    const second = marked(j.id, 2);
    // a's process was gone before the server could declare a lost, and before b started.
    expect(first.at(-1)!).toBeLessThan(heardA + TIMEOUT_MS);
    expect(first.at(-1)!).toBeLessThan(second[0]!);
    expect(await statuses(j.id)).toContainEqual(expect.stringMatching(/^queued: runner lease-a silent for \ds; back in the queue for a retry/));

    // a comes back: its late events are refused (the attempt is stale), nothing changes.
    proxy.heal();
    await waitFor('a to report again', async () => ((await t.store.getRunner(a.runnerId))?.lastHeartbeatAt ?? 0) > heardA + 500, 10_000, 50);
    expect(await getJob(j.id)).toMatchObject({ status: 'succeeded', attempt: 2, runnerId: b.runnerId });
    expect(marked(j.id, 1)).toEqual(first);
  });

  it('a blip shorter than the lease keeps the job on its runner: it succeeds in its first attempt', async () => {
    const a = await runner('blip-a', true);
    await runner('blip-b', false);
    const j = await job(2);
    await waitFor('the job to run on a', async () => (await getJob(j.id)).status === 'running' && marked(j.id, 1).length > 5, 30_000, 50);
    proxy.stall();
    await new Promise((r) => setTimeout(r, 400));
    proxy.heal();
    const done = await waitFor('the job to end', async () => {
      const now = await getJob(j.id);
      return ['succeeded', 'failed', 'lost', 'cancelled'].includes(now.status) ? now : null;
    }, 30_000, 50);
    expect(done).toMatchObject({ status: 'succeeded', attempt: 1, runnerId: a.runnerId });
    expect(marked(j.id, 2)).toEqual([]);
  });

  it("a stopped runner's (SIGTERM) job is retried on another runner, as a crashed runner's is", async () => {
    const a = await runner('stop-a', false);
    const j = await job(3);
    await waitFor('the job to run on a', async () => (await getJob(j.id)).status === 'running' && marked(j.id, 1).length > 5, 30_000, 50);
    const b = await runner('stop-b', false);
    await a.stop(); // what `flotilla runner` does on SIGTERM
    runners = runners.filter((r) => r !== a);
    const done = await waitFor('the job to end', async () => {
      const now = await getJob(j.id);
      return ['succeeded', 'failed', 'lost', 'cancelled'].includes(now.status) ? now : null;
    }, 30_000, 50);
    expect(done).toMatchObject({ status: 'succeeded', attempt: 2, runnerId: b.runnerId });
    expect(marked(j.id, 1).at(-1)!).toBeLessThan(marked(j.id, 2)[0]!);
    expect(await statuses(j.id)).toContainEqual(expect.stringMatching(/^queued: runner stop-a gave the attempt up, its processes are gone: runner stopped; back in the queue for a retry/));
  });

  it('the runner process frozen (SIGSTOP): its job watchdog stops the attempt before the server gives the job to another runner', async () => {
    const a = spawnFlotilla(['runner', '--server', t.url, '--token', await t.regToken(), '--work-dir', join(dir, 'work-frozen-a'), '--name', 'frozen-a']);
    const thaw = () => {
      try {
        process.kill(a.pid!, 'SIGCONT');
        process.kill(a.pid!, 'SIGKILL');
      } catch {
        // gone
      }
    };
    try {
      const j = await job(5);
      await waitFor('the job to run on a', async () => (await getJob(j.id)).status === 'running' && marked(j.id, 1).length > 5, 30_000, 50);
      const aId = (await getJob(j.id)).runnerId!;
      expect((await t.store.getRunner(aId))?.name).toBe('frozen-a');
      const b = await runner('frozen-b', false);
      process.kill(a.pid!, 'SIGSTOP');
      const done = await waitFor('the job to end', async () => {
        const now = await getJob(j.id);
        return ['succeeded', 'failed', 'lost', 'cancelled'].includes(now.status) ? now : null;
      }, 30_000, 50);
      const heardA = (await t.store.getRunner(aId))?.lastHeartbeatAt ?? 0;
      expect(done).toMatchObject({ status: 'succeeded', attempt: 2, runnerId: b.runnerId });
      const first = marked(j.id, 1);
      // The frozen runner could not stop its job itself; its watchdog did, before the server could
      // declare it lost and before b started the retry.
      expect(first.at(-1)!).toBeLessThan(heardA + TIMEOUT_MS);
      expect(first.at(-1)!).toBeLessThan(marked(j.id, 2)[0]!);
      process.kill(a.pid!, 'SIGCONT');
      // Its server connection was closed while it was frozen, and a `flotilla runner` with no
      // running job spreads its reconnect uniformly over RECONNECT_WINDOW_MS (a fleet must not
      // come back at once): wait the whole window and then some (CI: a 10 s wait failed).
      await waitFor('a to report again', async () => ((await t.store.getRunner(aId))?.lastHeartbeatAt ?? 0) > heardA + 500, RECONNECT_WINDOW_MS + 8_000, 50);
      expect(await getJob(j.id)).toMatchObject({ status: 'succeeded', attempt: 2, runnerId: b.runnerId });
      expect(marked(j.id, 1)).toEqual(first);
      expect(a.output()).toContain('job watchdog stopped a job');
    } finally {
      thaw();
    }
  });
});

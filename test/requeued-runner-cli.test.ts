/**
 * `flotilla jobs`, `jobs show` and `runners show` through main() against a real server with
 * fake runners on real WebSockets: a job whose runner was lost is back in the queue on no
 * runner (the runner column is empty, as in the API), and once another runner finished it, the
 * lost runner's recent jobs still list that attempt, `lost`.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/test-io.js';
import { FakeRunner, SHIPPED_AGENTS, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import type { Job } from '../src/protocol/index.js';

let t: TestServer;
let agents = '';
const fakes: FakeRunner[] = [];
const timers: NodeJS.Timeout[] = [];
const savedEnv = { ...process.env };
const run = (...args: string[]) => runCli([...args, '--server', t.url, '--token', t.admin]);
const at = () => new Date().toISOString();

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 8000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

beforeAll(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  agents = await mkdtemp(join(tmpdir(), 'flotilla-requeued-cli-'));
  await mkdir(join(agents, 'retry-job'));
  await writeFile(join(agents, 'retry-job', 'agent.yaml'), 'name: retry-job\nharness: command\ncommand: [echo, hi]\nretries: 1\n');
  await writeFile(join(agents, 'retry-job', 'prompt.md'), 'hi');
  t = await startTestServer({ agentsDirs: [SHIPPED_AGENTS, agents], dispatchIntervalMs: 100, heartbeatIntervalMs: 500, heartbeatTimeoutMs: 1500, sweepIntervalMs: 100 });
});
afterAll(async () => {
  for (const timer of timers) clearInterval(timer);
  for (const f of fakes) await f.close();
  await t.close();
  await rm(agents, { recursive: true, force: true });
  process.env = { ...savedEnv };
});

describe('a requeued job in the CLI', () => {
  it('jobs shows no runner for a job back in the queue; runners show lists the lost attempt', async () => {
    const a = await FakeRunner.start(t, { name: 'cli-lost', labels: { pool: 'cli' } });
    fakes.push(a);
    await a.hello({ name: 'cli-lost', labels: { pool: 'cli' } });
    const job = (await (await t.api('/api/jobs', { json: { agent: 'retry-job', labels: { pool: 'cli' } } })).json()) as Job;
    expect((await a.next('job.assign')).assignment.attempt).toBe(1);
    // Started (a job never started is requeued without a retry, and reads `requeued`): then killed.
    a.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 1, at: new Date().toISOString(), type: 'harness.started', data: { harness: 'command', pid: 1 } }] });
    await until(() => t.store.getJob(job.id), (j) => j?.status === 'running');
    a.kill();
    await until(() => t.store.getJob(job.id), (j) => j?.status === 'queued');

    const list = await run('jobs', '--status', 'queued');
    expect(list.code).toBe(0);
    const [header, ...rows] = list.out.split('\n');
    const row = rows.find((l) => l.startsWith(`${job.id} `))!;
    expect(row).toMatch(/ queued /);
    // The runner column (between `runner` and `created` in the header) is empty.
    expect(row.slice(header!.indexOf('runner'), header!.indexOf('created')).trim()).toBe('');
    expect((await run('jobs', 'show', String(job.id))).out).not.toMatch(new RegExp(`^runner:\\s+${a.runnerId}$`, 'm'));

    const b = await FakeRunner.start(t, { name: 'cli-done', labels: { pool: 'cli' } });
    fakes.push(b);
    await b.hello({ name: 'cli-done', labels: { pool: 'cli' } });
    timers.push(setInterval(() => !b.closed && b.send({ type: 'heartbeat', running: [{ jobId: job.id, attempt: 2 }] }), 100));
    expect((await b.next('job.assign', () => true, 8000)).assignment.attempt).toBe(2);
    b.send({ type: 'job.events', jobId: job.id, attempt: 2, events: [{ rseq: 1, at: at(), type: 'job.finished', data: { status: 'succeeded' } }] });
    await b.next('ack');
    await until(() => t.store.getJob(job.id), (j) => j?.status === 'succeeded');

    const show = await run('runners', 'show', 'cli-lost');
    expect(show.code).toBe(0);
    const lines = show.out.split('\n');
    const head = lines.findIndex((l) => /^job\s+agent\s+attempt\s+outcome\s+job now\s+assigned\s+ended$/.test(l));
    expect(head).toBeGreaterThan(0);
    expect(lines[head + 1]!.split(/\s{2,}/).slice(0, 5)).toEqual([String(job.id), 'retry-job', '1', 'lost', 'succeeded']);
  }, 30_000);
});

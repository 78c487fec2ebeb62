/**
 * The server restarted mid-job (embedded store kept, same port): the runner reconnects, the
 * job finishes, and its event sequence has no gap and no duplicate.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tempDir, spawnFlotilla, waitFor, ROOT } from './helpers.js';
import { startRunner } from '../src/runner/runner.js';
import { FlotillaClient } from '../src/client/client.js';
import type { JobEvent } from '../src/protocol/index.js';

async function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
  });
}

async function eventsOf(client: FlotillaClient, jobId: number): Promise<JobEvent[]> {
  const out: JobEvent[] = [];
  for await (const e of client.followEvents(jobId)) out.push(e);
  return out;
}

describe('server restart mid-job', () => {
  const dir = tempDir();
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
    dir.cleanup();
  });

  it('the runner reconnects and the job finishes with a gapless event sequence', async () => {
    const port = await freePort();
    const data = join(dir.path, 'data');
    const upArgs = ['up', '--no-runner', '--data', data, '--port', String(port), '--agents', join(ROOT, 'test', 'fixtures', 'agents')];
    const env = { ANTHROPIC_API_KEY: '', FLOTILLA_HEARTBEAT_INTERVAL_MS: '500' };
    let server = spawnFlotilla(upArgs, env);
    cleanups.push(() => void server.kill('SIGKILL'));
    const url = `http://127.0.0.1:${port}`;
    await waitFor('server up', async () => (await fetch(`${url}/healthz`)).ok, 30_000);
    const token = readFileSync(join(data, 'admin-token'), 'utf8').trim();
    const client = new FlotillaClient({ url, token });
    const { token: regToken } = await client.createRunnerToken({ labels: {}, expiresInSeconds: 600 });
    const runner = await startRunner({ serverUrl: url, registrationToken: regToken, workDir: join(dir.path, 'runner'), repoBaseDir: ROOT, reconnect: { minMs: 100, maxMs: 500 } });
    cleanups.push(() => runner.stop());

    const job = await client.createJob({ agent: 'sleeper', input: { seconds: 5 }, priority: 0 });
    await waitFor('the sleep to start', async () => {
      const j = await client.getJob(job.id);
      if (j.status !== 'running') return null;
      const seen: JobEvent[] = [];
      for await (const e of client.followEvents(job.id, { signal: AbortSignal.timeout(300) })) {
        seen.push(e);
      }
      return seen.some((e) => e.type === 'tool.call');
    }, 60_000, 200).catch(async () => {
      throw new Error(`never saw the tool call; server said:\n${server.output()}`);
    });

    server.kill('SIGKILL');
    await new Promise((r) => server.once('exit', r));
    server = spawnFlotilla(upArgs, env);
    await waitFor('server up again', async () => (await fetch(`${url}/healthz`)).ok, 30_000);

    const done = await waitFor('job to finish', async () => {
      const j = await client.getJob(job.id);
      return ['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
    }, 90_000, 250);
    expect({ status: done.status, error: done.error }).toEqual({ status: 'succeeded', error: null });

    const events = await eventsOf(client, job.id);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    // No duplicate: each tool call id appears once, and one job.finished.
    const callIds = events.filter((e) => e.type === 'tool.call').map((e) => (e.type === 'tool.call' ? e.data.id : ''));
    expect(new Set(callIds).size).toBe(callIds.length);
    expect(callIds.length).toBe(1);
    expect(events.filter((e) => e.type === 'job.finished').length).toBe(1);
    expect(events.filter((e) => e.type === 'harness.started').length).toBe(1);
  });
});

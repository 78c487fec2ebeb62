/**
 * A job printing 200,000 lines on a runner that shares the server's process (as `flotilla up`'s
 * own runner does): the job succeeds with every line stored, and the runner is never taken for
 * silent. Before the runner's outbox had a send window and O(1) operations (runner/outbox.ts),
 * the server read the runner's heartbeat behind ~1,000 queued frames, 20 s late, and lost the
 * job (and every other runner's, the process being busy): a fresh tester's finding. A real
 * server (SQLite) and a real runner in this process, heartbeat timeout 4 s.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../src/protocol/index.js';
import { startRunner, type RunningRunner } from '../src/runner/runner.js';
import { SHIPPED_AGENTS, startTestServer, type TestServer } from '../src/server/test-helpers.js';

const LINES = 200_000;

describe('a job flooding its output on a runner in the server process', () => {
  let t: TestServer;
  let runner: RunningRunner;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'flotilla-flood-'));
    const agents = join(dir, 'agents');
    mkdirSync(join(agents, 'flood'), { recursive: true });
    writeFileSync(join(agents, 'flood', 'agent.yaml'), `name: flood\nharness: command\ncommand: [sh, -c, "seq 1 ${LINES}; echo done"]\n`);
    writeFileSync(join(agents, 'flood', 'prompt.md'), 'flood');
    t = await startTestServer({ agentsDirs: [SHIPPED_AGENTS, agents], dispatchIntervalMs: 100, heartbeatIntervalMs: 500, heartbeatTimeoutMs: 4000, sweepIntervalMs: 250 });
    runner = await startRunner({ serverUrl: t.url, registrationToken: await t.regToken(), workDir: join(dir, 'work'), name: 'inproc', capacity: 1, reconnect: { minMs: 20, maxMs: 100 } });
  });
  afterAll(async () => {
    await runner?.stop();
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('succeeds with every line stored, the runner never silent', async () => {
    const job = (await (await t.api('/api/jobs', { json: { agent: 'flood', input: {} } })).json()) as Job;
    let final: Job | null = null;
    for (let i = 0; i < 1200 && !final; i++) {
      const j = (await (await t.api(`/api/jobs/${job.id}`)).json()) as Job;
      if (['succeeded', 'failed', 'lost', 'cancelled'].includes(j.status)) final = j;
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(final).toMatchObject({ status: 'succeeded' });
    // every stdout line, in order (read in pages: the store gives at most 10,000 at once)
    const lines: string[] = [];
    for (let after = 0; ; ) {
      const page = await t.store.listEvents(job.id, after, 10_000);
      if (page.length === 0) break;
      for (const e of page) if (e.type === 'log') lines.push((e.data as { line: string }).line);
      after = page.at(-1)!.seq;
    }
    expect(lines.length).toBe(LINES + 1);
    expect([lines[0], lines[LINES - 1], lines[LINES]]).toEqual(['1', String(LINES), 'done']);
    // never taken for silent: its first connection is still the one it has (no lost attempt, no reconnect)
    const runners = (await (await t.api('/api/runners')).json()) as { runners: Array<{ name: string; status: string }> };
    expect(runners.runners.find((r) => r.name === 'inproc')?.status).toBe('online');
  }, 120_000);
});

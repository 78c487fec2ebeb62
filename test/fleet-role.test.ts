// Issue 5, role selector and the new-runner hold, through the real server (SQLite and
// PostgreSQL): an agent's `role: build` (or a run's `role`) sends its jobs only to runners
// labelled role=build (`flotilla runner --role build`); with newRunnerHoldMs (`flotilla up
// --hold-new-runners 15m`) a newly registered runner is held (`provisioning`) that long.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job, RunnerDetail, RunnerList } from '../src/protocol/index.js';
import { createTestDatabase } from '../src/store/test-pg.js';
import { FakeRunner, SHIPPED_AGENTS, startTestServer, type TestServer } from '../src/server/test-helpers.js';

const pg = await createTestDatabase();
let agentsDir = '';
beforeAll(async () => {
  agentsDir = await mkdtemp(join(tmpdir(), 'flotilla-role-agents-'));
  await mkdir(join(agentsDir, 'builder'), { recursive: true });
  await writeFile(join(agentsDir, 'builder', 'agent.yaml'), 'name: builder\nharness: command\ncommand: [echo, hi]\nrole: build\nrunnerLabels: { os: linux }\n');
  await writeFile(join(agentsDir, 'builder', 'prompt.md'), 'hi');
});
afterAll(async () => {
  await pg?.drop();
  if (agentsDir) await rm(agentsDir, { recursive: true, force: true });
});

describe.each([['sqlite', null], ...(pg ? [['postgres', pg.url]] : [])] as Array<[string, string | null]>)('roles and the new-runner hold (%s)', (_d, databaseUrl) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ dispatchIntervalMs: 100, newRunnerHoldMs: 15 * 60_000, agentsDirs: [SHIPPED_AGENTS, agentsDir], ...(databaseUrl ? { databaseUrl } : {}) });
  });
  afterAll(() => t.close());

  const connect = async (name: string, labels: Record<string, string>) => {
    const r = await FakeRunner.start(t, { name, labels });
    await r.hello({ name, labels });
    return r;
  };

  it('a new runner starts held (provisioning) for the configured time and takes nothing until resumed', async () => {
    const r = await connect('fresh', { os: 'linux', role: 'build' });
    try {
      const d = (await (await t.api(`/api/runners/${r.runnerId}`)).json()) as RunnerDetail;
      expect(d.runner.status).toBe('provisioning');
      const until = Date.parse(d.runner.hold!.until) - Date.now();
      expect(until).toBeGreaterThan(15 * 60_000 - 10_000);
      expect(until).toBeLessThanOrEqual(15 * 60_000);
      const job = (await (await t.api('/api/jobs', { json: { agent: 'builder' } })).json()) as Job;
      expect(job.selector).toEqual({ os: 'linux', role: 'build' });
      expect(await r.none('job.assign', 600)).toBe(true);
      expect((await t.api(`/api/runners/${r.runnerId}/resume`, { json: {} })).status).toBe(200);
      expect((await r.next('job.assign')).assignment.jobId).toBe(job.id);
      r.send({ type: 'job.events', jobId: job.id, attempt: 1, events: [{ rseq: 1, at: new Date().toISOString(), type: 'job.finished', data: { status: 'succeeded' } }] });
    } finally {
      await r.close();
    }
  });

  it('an agent role goes only to runners with that role; a run may ask for another; runners --role filters', async () => {
    const review = await connect('rev', { os: 'linux', role: 'review' });
    const build = await connect('bld', { os: 'linux', role: 'build' });
    try {
      for (const r of [review, build]) expect((await t.api(`/api/runners/${r.runnerId}/resume`, { json: {} })).status).toBe(200);
      const j1 = (await (await t.api('/api/jobs', { json: { agent: 'builder' } })).json()) as Job;
      expect((await build.next('job.assign')).assignment.jobId).toBe(j1.id);
      const j2 = (await (await t.api('/api/jobs', { json: { agent: 'builder', role: 'review' } })).json()) as Job;
      expect(j2.selector).toEqual({ os: 'linux', role: 'review' });
      expect((await review.next('job.assign')).assignment.jobId).toBe(j2.id);
      const bad = await t.api('/api/jobs', { json: { agent: 'builder', role: 'Bad Role' } });
      expect(bad.status).toBe(400);
      const list = (await (await t.api('/api/runners?role=review')).json()) as RunnerList;
      expect(list.runners.map((r) => r.name)).toEqual(['rev']);
    } finally {
      await review.close();
      await build.close();
    }
  });
});

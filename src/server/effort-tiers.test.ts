// Issue 8 through the real server: account effort tiers (members read, admins change), a job
// created with a stored tier is assigned its model and effort level, and a runner's slots
// count only what its jobs hold (an agent with `holds: none` takes no slot).
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EffortTierList, Job, RunnerDetail, RunnerList } from '../protocol/index.js';
import { createApiToken } from './auth.js';
import { FakeRunner, SHIPPED_AGENTS, startTestServer, type TestServer } from './test-helpers.js';

async function waitFor<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

let agentsDir = '';
let t: TestServer;
const runners: FakeRunner[] = [];
beforeAll(async () => {
  agentsDir = await mkdtemp(join(tmpdir(), 'flotilla-tiers-agents-'));
  for (const [name, extra] of [['plain-job', ''], ['watcher', 'holds: none\n']] as const) {
    await mkdir(join(agentsDir, name), { recursive: true });
    await writeFile(join(agentsDir, name, 'agent.yaml'), `name: ${name}\nharness: command\ncommand: [echo, hi]\n${extra}`);
    await writeFile(join(agentsDir, name, 'prompt.md'), 'hi');
  }
  t = await startTestServer({ dispatchIntervalMs: 100, agentsDirs: [SHIPPED_AGENTS, agentsDir] });
});
afterAll(async () => {
  for (const r of runners) r.close();
  await t?.close();
  await rm(agentsDir, { recursive: true, force: true });
});

describe('effort tiers API', () => {
  it('members read, admins set and delete; bad input is refused naming the field', async () => {
    const member = await createApiToken(t.store, 'reader', 'member', Date.now());
    const list0 = (await (await t.api('/api/effort-tiers', { token: member })).json()) as EffortTierList;
    expect(list0.tiers.map((x) => `${x.name}:${x.source}`)).toEqual(['high:builtin', 'max:builtin', 'medium:builtin']);
    const refused = await t.api('/api/effort-tiers/cheap', { method: 'PUT', token: member, json: { model: 'claude-haiku-4-5', level: 'low' } });
    expect(refused.status).toBe(403);
    expect(await t.store.listEffortTiers()).toEqual([]);

    const set = await t.api('/api/effort-tiers/cheap', { method: 'PUT', json: { model: 'claude-haiku-4-5', level: 'low' } });
    expect(set.status).toBe(200);
    expect(await set.json()).toMatchObject({ name: 'cheap', model: 'claude-haiku-4-5', level: 'low', source: 'account' });
    const redefine = await t.api('/api/effort-tiers/max', { method: 'PUT', json: { model: 'claude-opus-4-6', level: 'xhigh' } });
    expect(redefine.status).toBe(200);

    const badLevel = await t.api('/api/effort-tiers/cheap', { method: 'PUT', json: { model: 'm', level: 'turbo' } });
    expect(badLevel.status).toBe(400);
    expect(JSON.stringify(await badLevel.json())).toContain('level');
    const badName = await t.api('/api/effort-tiers/Bad_Name', { method: 'PUT', json: { model: 'm', level: 'low' } });
    expect(badName.status).toBe(400);
    expect(((await badName.json()) as { error: { field: string } }).error.field).toBe('name');

    // the model is one argument of the harness's command line: an option-like or multi-line name is refused, nothing stored
    for (const model of ['--dangerously-skip-permissions', 'a\nb', 'a b', '-m', 'x'.repeat(201)]) {
      const bad = await t.api('/api/effort-tiers/weird', { method: 'PUT', json: { model, level: 'low' } });
      expect(bad.status, model).toBe(400);
      expect(await bad.json()).toEqual({ error: { code: 'invalid_request', message: "model: must be 1-200 characters of letters, digits, . _ : @ / + - [ ], starting with a letter or digit (the harness's --model)", field: 'model' } });
    }
    expect((await t.store.listEffortTiers()).map((x) => x.name).sort()).toEqual(['cheap', 'max']);
    // names providers' clouds use, and Claude Code's 1M-context suffix
    for (const model of ['claude-sonnet-4-5[1m]', 'anthropic.claude-3-5-sonnet-20241022-v2:0', 'claude-3-5-sonnet-v2@20241022', 'qwen2.5-coder:7b', 'openai/gpt-4o']) {
      expect((await t.api('/api/effort-tiers/odd', { method: 'PUT', json: { model, level: 'low' } })).status, model).toBe(200);
    }
    expect((await t.api('/api/effort-tiers/odd', { method: 'DELETE' })).status).toBe(204);

    const list = (await (await t.api('/api/effort-tiers', { token: member })).json()) as EffortTierList;
    expect(list.tiers.map((x) => [x.name, x.model, x.level, x.source])).toEqual([
      ['cheap', 'claude-haiku-4-5', 'low', 'account'],
      ['high', 'claude-sonnet-4-5', 'high', 'builtin'],
      ['max', 'claude-opus-4-6', 'xhigh', 'account'],
      ['medium', 'claude-sonnet-4-5', 'medium', 'builtin'],
    ]);
    expect((await t.api('/api/effort-tiers/max', { method: 'DELETE', token: member })).status).toBe(403);
    expect((await t.api('/api/effort-tiers/max', { method: 'DELETE' })).status).toBe(204);
    expect((await t.api('/api/effort-tiers/max', { method: 'DELETE' })).status).toBe(404);
    expect((await t.store.listEffortTiers()).map((x) => x.name)).toEqual(['cheap']);
  });

  it('a job run at a stored tier gets its model and level; an unknown tier is refused', async () => {
    const r = await FakeRunner.start(t, { name: 'tiers-r', capacity: 2 });
    runners.push(r);
    await r.hello({ name: 'tiers-r', capacity: 2 });
    await t.api('/api/effort-tiers/cheap', { method: 'PUT', json: { model: 'claude-haiku-4-5', level: 'low' } });
    const bad = await t.api('/api/jobs', { json: { agent: 'plain-job', input: {}, effort: 'nope' } });
    expect(bad.status).toBe(422);
    expect(await bad.text()).toContain('cheap');
    const res = await t.api('/api/jobs', { json: { agent: 'plain-job', input: {}, effort: 'cheap' } });
    expect(res.status).toBe(201);
    const job = (await res.json()) as Job;
    const assign = await r.next('job.assign');
    expect(assign.assignment).toMatchObject({ jobId: job.id, effort: { tier: 'cheap', model: 'claude-haiku-4-5', level: 'low' } });
    await t.store.transitionJob(job.id, null, ['assigned', 'running'], 'cancelled', Date.now());
    r.close();
  });
});

describe('runner slots', () => {
  it('a job holding none takes no slot: the runner reads online 0/1, a workspace job 1/1 busy', async () => {
    const r = await FakeRunner.start(t, { name: 'slots-r', capacity: 1 });
    runners.push(r);
    await r.hello({ name: 'slots-r', capacity: 1 });
    const watcher = (await (await t.api('/api/jobs', { json: { agent: 'watcher', input: {} } })).json()) as Job;
    expect((await r.next('job.assign')).assignment.jobId).toBe(watcher.id);
    const mine = (l: RunnerList) => l.runners.find((x) => x.name === 'slots-r');
    const one = await waitFor(async () => mine((await (await t.api('/api/runners')).json()) as RunnerList), (x) => (x?.runningJobs.length ?? 0) === 1);
    expect(one).toMatchObject({ runningJobs: [watcher.id], slotsUsed: 0, capacity: 1, status: 'online' });
    const detail = (await (await t.api(`/api/runners/${r.runnerId}`)).json()) as RunnerDetail;
    expect(detail.runner).toMatchObject({ slotsUsed: 0, status: 'online' });
    // A workspace job still fits beside it and takes the one slot.
    const plain = (await (await t.api('/api/jobs', { json: { agent: 'plain-job', input: {} } })).json()) as Job;
    expect((await r.next('job.assign')).assignment.jobId).toBe(plain.id);
    const two = await waitFor(async () => mine((await (await t.api('/api/runners')).json()) as RunnerList), (x) => (x?.runningJobs.length ?? 0) === 2);
    expect(two).toMatchObject({ slotsUsed: 1, capacity: 1, status: 'busy' });
  });
});

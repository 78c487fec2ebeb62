/**
 * `flotilla tiers list|set|delete` and the runners slots figure through main() against a real
 * server: tiers set with flags and with FLOTILLA_TIER_* env vars, listed (text and --json),
 * deleted; bad arguments exit 2, API refusals 1; and `flotilla runners` reads `0/1 online` for a
 * runner whose only job holds none (the agent takes no slot).
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/test-io.js';
import { FakeRunner, SHIPPED_AGENTS, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import type { EffortTierList, Job } from '../src/protocol/index.js';

let t: TestServer;
let agentsDir = '';
const fakes: FakeRunner[] = [];
const savedEnv = { ...process.env };

const run = (...args: string[]) => runCli([...args, '--server', t.url, '--token', t.admin]);

beforeAll(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  agentsDir = await mkdtemp(join(tmpdir(), 'flotilla-tiers-cli-'));
  await mkdir(join(agentsDir, 'watcher'), { recursive: true });
  await writeFile(join(agentsDir, 'watcher', 'agent.yaml'), 'name: watcher\nharness: command\ncommand: [echo, hi]\nholds: none\n');
  await writeFile(join(agentsDir, 'watcher', 'prompt.md'), 'hi');
  t = await startTestServer({ dispatchIntervalMs: 100, heartbeatTimeoutMs: 120_000, agentsDirs: [SHIPPED_AGENTS, agentsDir] });
});
afterAll(async () => {
  for (const f of fakes) await f.close();
  await t.close();
  await rm(agentsDir, { recursive: true, force: true });
  process.env = { ...savedEnv };
});

describe('tiers CLI', () => {
  it('sets, lists and deletes account tiers; refuses bad input', async () => {
    const set = await run('tiers', 'set', 'cheap', '--model', 'claude-haiku-4-5', '--effort', 'low');
    expect(set).toMatchObject({ code: 0, out: 'tier set: cheap → claude-haiku-4-5 at effort low\n' });
    process.env.FLOTILLA_TIER_MODEL = 'claude-opus-4-6';
    process.env.FLOTILLA_TIER_EFFORT = 'xhigh';
    try {
      expect((await run('tiers', 'set', 'deep', '--json')).code).toBe(0);
    } finally {
      delete process.env.FLOTILLA_TIER_MODEL;
      delete process.env.FLOTILLA_TIER_EFFORT;
    }
    const list = await run('tiers');
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^cheap\s+claude-haiku-4-5\s+low\s+account\s+\S+$/m);
    expect(list.out).toMatch(/^deep\s+claude-opus-4-6\s+xhigh\s+account\s+\S+$/m);
    expect(list.out).toMatch(/^max\s+claude-opus-4-6\s+max\s+builtin\s+-$/m);
    const json = JSON.parse((await run('tiers', 'list', '--json')).out) as EffortTierList;
    expect(json.tiers.map((x) => x.name)).toEqual(['cheap', 'deep', 'high', 'max', 'medium']);

    expect((await run('tiers', 'set', 'cheap', '--model', 'm', '--effort', 'turbo')).code).toBe(2);
    expect((await run('tiers', 'set', 'Bad_Name', '--model', 'm', '--effort', 'low')).code).toBe(2);
    expect((await run('tiers', 'set', 'cheap', '--effort', 'low')).code).toBe(2);
    expect(await run('tiers', 'delete', 'deep')).toMatchObject({ code: 0, out: 'tier deleted: deep\n' });
    const again = await run('tiers', 'delete', 'deep');
    expect(again.code).toBe(1);
    expect(again.err).toContain('no account tier "deep"');
    expect((await t.store.listEffortTiers()).map((x) => x.name)).toEqual(['cheap']);
  });

  it('runners: a job holding none takes no slot (0/1, online)', async () => {
    const r = await FakeRunner.start(t, { name: 'box-w', capacity: 1 });
    fakes.push(r);
    await r.hello({ name: 'box-w', capacity: 1 });
    const job = (await (await t.api('/api/jobs', { json: { agent: 'watcher', input: {} } })).json()) as Job;
    await r.next('job.assign');
    const list = await run('runners');
    expect(list.code).toBe(0);
    expect(list.out).toMatch(new RegExp(`^${r.runnerId}\\s+box-w\\s+online\\s+\\S*\\s*0/1\\s+${job.id}\\s`, 'm'));
  });
});

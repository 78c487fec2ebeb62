/**
 * The fleet commands through main() against a real server with fake runners on real
 * WebSockets: `runners` (slots, jobs, hold, queue, filters), `runners show`, `hold` (+ --extend),
 * `resume`, `jobs start` (refused without --force past capacity, placed with it), `runners revoke`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/test-io.js';
import { FakeRunner, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import type { Job, Runner } from '../src/protocol/index.js';

let t: TestServer;
const fakes: FakeRunner[] = [];
const savedEnv = { ...process.env };

const run = (...args: string[]) => runCli([...args, '--server', t.url, '--token', t.admin]);

beforeAll(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  t = await startTestServer({ dispatchIntervalMs: 100, heartbeatTimeoutMs: 120_000 });
});
afterAll(async () => {
  for (const f of fakes) await f.close();
  await t.close();
  process.env = { ...savedEnv };
});

describe('fleet CLI', () => {
  it('lists runners with slots and queue, holds, extends, resumes, starts a job with --force, revokes', async () => {
    const a = await FakeRunner.start(t, { name: 'box-a', labels: { os: 'linux', role: 'builder' }, capacity: 2 });
    fakes.push(a);
    await a.hello({ name: 'box-a', labels: { os: 'linux', role: 'builder' }, capacity: 2 });
    const b = await FakeRunner.start(t, { name: 'box-b', labels: { os: 'mac' }, capacity: 1 });
    fakes.push(b);
    await b.hello({ name: 'box-b', labels: { os: 'mac' }, capacity: 1 });

    const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { os: 'linux' } } })).json()) as Job;
    await a.next('job.assign');
    const list = await run('runners');
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^id\s+name\s+status\s+labels\s+slots\s+jobs\s+hold\s+last heartbeat$/m);
    expect(list.out).toMatch(new RegExp(`^${a.runnerId}\\s+box-a\\s+busy\\s+os=linux,role=builder\\s+1/2\\s+${job.id}\\s`, 'm'));
    expect(list.out).toMatch(new RegExp(`^${b.runnerId}\\s+box-b\\s+online\\s+os=mac\\s+0/1\\s`, 'm'));
    expect(list.out).toMatch(/^queue: 0 jobs waiting$/m);
    const byRole = await run('runners', '--role', 'builder', '--json');
    expect((JSON.parse(byRole.out) as { runners: Runner[] }).runners.map((r) => r.name)).toEqual(['box-a']);
    const byLabel = await run('runners', '--label', 'os=mac');
    expect(byLabel.out).toContain('box-b');
    expect(byLabel.out).not.toContain('box-a');
    expect((await run('runners', '--status', 'sleepy')).code).toBe(2);

    // hold by name, extend, then the queue waits.
    const held = await run('hold', 'box-b', '--for', '15m', '--reason', 'disk full');
    expect(held.code).toBe(0);
    expect(held.out).toMatch(/^runner box-b \(\d+\) on hold until \S+: disk full$/m);
    const ext = await run('hold', String(b.runnerId), '--for', '1h', '--reason', 'still full', '--extend', '--json');
    const r = (JSON.parse(ext.out) as { runner: Runner }).runner;
    expect(r.status).toBe('on_hold');
    expect(Date.parse(r.hold!.until) - Date.now()).toBeGreaterThan(74 * 60_000);
    expect((await run('hold', 'box-b', '--for', '2h', '--reason', 'x')).code).toBe(2);
    // --extend without --reason keeps the reason; a new hold without one is a usage error.
    const kept = await run('hold', 'box-b', '--for', '15m', '--extend');
    expect(kept).toMatchObject({ code: 0, err: '' });
    expect(kept.out).toMatch(/^runner box-b \(\d+\) on hold until \S+: still full$/m);
    expect(await run('hold', 'box-a', '--for', '15m')).toMatchObject({ code: 2, out: '', err: 'flotilla: hold: --reason is required (only --extend may leave it out, keeping the current reason)\n' });
    const macJob = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { os: 'mac' } } })).json()) as Job;
    expect(await b.none('job.assign', 400)).toBe(true);
    const show = await run('runners', 'show', 'box-b');
    expect(show.out).toMatch(/^status:\s+on_hold$/m);
    expect(show.out).toMatch(/^hold:\s+until \S+ \(still full\)$/m);
    expect((await run('runners')).out).toMatch(/^queue: 1 job waiting$/m);

    // jobs start without --force: refused (not a terminal), naming the held runner; with --force: placed.
    const refused = await run('jobs', 'start', String(macJob.id));
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/not started: every matching runner is on hold \(box-b 0\/1 on hold\)/);
    const forced = await run('jobs', 'start', String(macJob.id), '--force');
    expect(forced.code).toBe(0);
    expect(forced.out).toBe(`job ${macJob.id} assigned on runner box-b (${b.runnerId}) (attempt 1)\n`);
    expect((await b.next('job.assign')).assignment).toMatchObject({ jobId: macJob.id, force: true });

    const resumed = await run('resume', 'box-b');
    expect(resumed.out).toMatch(/^runner box-b \(\d+\) resumed: busy$/m);
    // Again: nothing to resume, and it says so (exit 0: the runner is in the state asked for).
    expect(await run('resume', 'box-b')).toMatchObject({ code: 0, err: '', out: `runner box-b (${b.runnerId}) was not on hold: busy\n` });

    const revoked = await run('runners', 'revoke', 'box-b');
    expect(revoked.code).toBe(0);
    expect(revoked.out).toMatch(/^runner box-b \(\d+\) revoked at \S+$/m);
    while (!b.closed) await new Promise((res) => setTimeout(res, 20));
    expect(b.closeCode).toBe(4403);
    // Its job stays with it until its lease has surely run out (the liveness sweep, after its
    // last heartbeat + the heartbeat timeout): never given to another runner beside it.
    expect((await t.store.getJob(macJob.id))?.status).toBe('assigned');
    expect((await run('runners', 'show', 'box-b')).out).toMatch(/^status:\s+revoked$/m);
    expect((await run('hold', 'nobody', '--for', '1h', '--reason', 'x')).err).toMatch(/no runner named "nobody"/);
  });
  it('runners set: the owner sets capacity and browser slots (auto clears); bad values exit 2, refused ones 1', async () => {
    const c = await FakeRunner.start(t, { name: 'box-c', labels: { os: 'linux' }, capacity: 1 });
    fakes.push(c);
    await c.hello({ name: 'box-c', labels: { os: 'linux' }, capacity: 1 });
    const set = await run('runners', 'set', 'box-c', '--capacity', '3', '--browser-slots', '2');
    expect(set).toMatchObject({ code: 0, out: `runner box-c (${c.runnerId}): capacity 3, browser slots 2\n` });
    const json = await run('runners', 'set', 'box-c', '--browser-slots', '1', '--json');
    expect(json.code).toBe(0);
    expect((JSON.parse(json.out) as { runner: Runner }).runner).toMatchObject({ id: c.runnerId, capacity: 3, browserSlots: 1 });
    const over = await run('runners', 'set', 'box-c', '--capacity', '1', '--browser-slots', '2');
    // both given: a usage error (exit 2), as every other bad argument, before any request
    expect(over.code).toBe(2);
    expect(over.err).toBe('flotilla: runners set: --browser-slots 2 is more than the capacity (1 parallel job): pass --browser-slots 1 or less, or a larger --capacity\n');
    // only the slots given, above the capacity the server has (3 here): the server's refusal, exit 1
    const overServer = await run('runners', 'set', 'box-c', '--browser-slots', '4');
    expect([overServer.code, overServer.err]).toEqual([1, 'flotilla: runners set: --browser-slots 4 is more than the capacity (3 parallel jobs): pass --browser-slots 3 or less, or a larger --capacity\n']);
    expect((await run('runners', 'set', 'box-c', '--capacity', '5')).code).toBe(2);
    expect((await run('runners', 'set', 'box-c')).code).toBe(2);
    const auto = await run('runners', 'set', 'box-c', '--capacity', 'auto', '--browser-slots', 'auto');
    expect(auto.err).toBe("");
    expect(auto).toMatchObject({ code: 0, out: `runner box-c (${c.runnerId}): capacity 1, browser slots 1\n` });
    // --capacity auto alone, under the owner's browser slots: they follow the capacity down, and it says so.
    expect((await run('runners', 'set', 'box-c', '--capacity', '3', '--browser-slots', '2')).code).toBe(0);
    const autoOnly = await run('runners', 'set', 'box-c', '--capacity', 'auto');
    expect(autoOnly).toMatchObject({ code: 0, err: '', out: `runner box-c (${c.runnerId}): capacity 1, browser slots 1 (lowered from 2 to fit the capacity; change with --browser-slots)\n` });
    process.env.FLOTILLA_RUNNER_CAPACITY = '2';
    try {
      expect((await run('runners', 'set', 'box-c')).out).toBe(`runner box-c (${c.runnerId}): capacity 2, browser slots 1\n`);
    } finally {
      delete process.env.FLOTILLA_RUNNER_CAPACITY;
    }
  });
});

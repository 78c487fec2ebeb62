/**
 * `flotilla runners` and `runners show` through main() against a real server with fake runners on
 * real WebSockets: a revoked runner lists as `revoked` (and `--status revoked` finds it), and
 * `runners show` prints the runner's recent activity (text and --json), as the API and the
 * dashboard have it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/test-io.js';
import { FakeRunner, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import type { Job, RunnerActivityEntry, RunnerDetail, RunnerList } from '../src/protocol/index.js';

let t: TestServer;
const fakes: FakeRunner[] = [];
const savedEnv = { ...process.env };

const run = (...args: string[]) => runCli([...args, '--server', t.url, '--token', t.admin]);
const at = () => new Date().toISOString();

beforeAll(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  t = await startTestServer({ dispatchIntervalMs: 100, heartbeatTimeoutMs: 120_000 });
});
afterAll(async () => {
  for (const f of fakes) await f.close();
  await t.close();
  process.env = { ...savedEnv };
});

describe('runners CLI', () => {
  it('a revoked runner lists as revoked; --status revoked lists only those, --status offline not them', async () => {
    const up = await FakeRunner.start(t, { name: 'rc-up' });
    fakes.push(up);
    await up.hello({ name: 'rc-up' });
    const gone = await FakeRunner.start(t, { name: 'rc-gone' });
    fakes.push(gone);
    await gone.hello({ name: 'rc-gone' });
    const revoke = await run('runners', 'revoke', 'rc-gone');
    expect(revoke.code).toBe(0);
    const list = await run('runners');
    expect(list.code).toBe(0);
    expect(list.out).toMatch(new RegExp(`^${gone.runnerId}\\s+rc-gone\\s+revoked\\s`, 'm'));
    expect(list.out).toMatch(new RegExp(`^${up.runnerId}\\s+rc-up\\s+online\\s`, 'm'));
    const revoked = await run('runners', '--status', 'revoked', '--json');
    expect(revoked.code).toBe(0);
    expect((JSON.parse(revoked.out) as RunnerList).runners.map((r) => [r.name, r.status])).toEqual([['rc-gone', 'revoked']]);
    const offline = await run('runners', '--status', 'offline');
    expect(offline.code).toBe(0);
    expect(offline.out).not.toContain('rc-gone');
    const show = await run('runners', 'show', String(gone.runnerId));
    expect(show.out).toMatch(/^status: {4}revoked$/m);
  });

  it('runners show prints the runner’s recent activity, newest first (text and --json), --activity N lines', async () => {
    const r = await FakeRunner.start(t, { name: 'rc-busy', labels: { pool: 'show' } });
    fakes.push(r);
    await r.hello({ name: 'rc-busy', labels: { pool: 'show' } });
    const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { pool: 'show' } } })).json()) as Job;
    const { assignment: a } = await r.next('job.assign');
    const done = { rseq: 1, at: at(), type: 'job.finished', data: { status: 'failed', error: 'tests failed:\n3 of 4' } };
    r.send({ type: 'job.events', jobId: job.id, attempt: a.attempt, events: [done] });
    await r.next('ack');
    expect((await run('hold', 'rc-busy', '--for', '15m', '--reason', 'disk full')).code).toBe(0);

    const api = (await (await t.api(`/api/runners/${r.runnerId}/activity?limit=20`)).json()) as { entries: RunnerActivityEntry[] };
    expect(api.entries.map((e) => e.kind)).toEqual(['held', 'job.ended', 'job.started', 'connected', 'registered']);

    const text = await run('runners', 'show', 'rc-busy');
    expect(text.code).toBe(0);
    const lines = text.out.split('\n');
    const from = lines.indexOf('activity (newest first):');
    expect(from).toBeGreaterThan(0);
    expect(lines[from + 1]).toMatch(/^at\s+kind\s+what$/);
    const rows = lines.slice(from + 2).filter((l) => l.trim() !== '');
    expect(rows.map((l) => l.split(/\s{2,}/))).toEqual(api.entries.map((e) => [e.at, e.kind, e.text.replace(/\s+/g, ' ')]));
    expect(rows[1]).toContain(`job #${job.id} test-fixer ended failed: error — tests failed: 3 of 4`);

    const json = await run('runners', 'show', String(r.runnerId), '--json');
    expect(json.code).toBe(0);
    const d = JSON.parse(json.out) as RunnerDetail & { activity: RunnerActivityEntry[] };
    expect(d.runner.name).toBe('rc-busy');
    expect(d.recentJobs.map((j) => j.id)).toEqual([job.id]);
    expect(d.activity).toEqual(api.entries);

    const two = await run('runners', 'show', 'rc-busy', '--activity', '2', '--json');
    expect((JSON.parse(two.out) as { activity: RunnerActivityEntry[] }).activity).toEqual(api.entries.slice(0, 2));
    expect((await run('runners', 'show', 'rc-busy', '--activity', '0')).code).toBe(2);
  });
});

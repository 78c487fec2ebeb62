/**
 * `flotilla runners update` through main() against a real server with fake runners on real
 * WebSockets: one runner by name (text) or id (--json), `--all` (every connected runner; a
 * repeat says "already updating"), and the argument errors (exit 2) and API errors (exit 1).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/test-io.js';
import { FakeRunner, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import type { UpdateRunnerResponse } from '../src/protocol/index.js';

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

async function fake(name: string): Promise<FakeRunner> {
  const r = await FakeRunner.start(t, { name });
  fakes.push(r);
  await r.hello({ name });
  return r;
}

describe('runners update CLI', () => {
  it('argument errors exit 2 before any request; an offline runner exits 1 naming why', async () => {
    const none = await run('runners', 'update');
    expect([none.code, none.err.trim()]).toEqual([2, 'flotilla: runners update: give one RUNNER (id or name) or --all']);
    const both = await run('runners', 'update', 'x', '--all');
    expect(both.code).toBe(2);
    const bad = await run('runners', 'update', 'x', '--to', '1.0; rm -rf /');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--to.*a version must be 1-100 characters/);
    await t.api('/api/runners/register', { token: null, json: { token: await t.regToken(), name: 'cli-away' } });
    const away = await run('runners', 'update', 'cli-away');
    expect(away.code).toBe(1);
    expect(away.err).toMatch(/cli-away .* is offline/);
    const help = await run('runners', 'update', '--help');
    expect(help.code).toBe(0);
    expect(help.out).toContain('--to <version>');
  });

  it('one runner by name (text) and by id (--json); --all updates every connected one, repeats say already', async () => {
    const a = await fake('cli-a');
    const b = await fake('cli-b');
    const one = await run('runners', 'update', 'cli-a', '--to', '0.2.0');
    expect([one.code, one.out.trim()]).toEqual([0, `runner cli-a (${a.runnerId}) updating to 0.2.0: no new jobs; it runs its update command and restarts`]);
    expect((await a.next('runner.update')).version).toBe('0.2.0');
    a.send({ type: 'runner.update', phase: 'draining', version: '0.2.0' });
    const json = await run('runners', 'update', String(b.runnerId), '--to', 'latest', '--json');
    expect(json.code).toBe(0);
    const body = JSON.parse(json.out) as UpdateRunnerResponse;
    expect([body.runner.name, body.runner.status, body.version, body.started]).toEqual(['cli-b', 'updating', 'latest', true]);
    const all = await run('runners', 'update', '--all', '--to', '0.2.0');
    expect(all.code).toBe(0);
    expect(all.out).toContain(`runner cli-a (${a.runnerId}) is already updating (asked again for 0.2.0: nothing sent)`);
    expect(all.out).toContain(`runner cli-b (${b.runnerId}) is already updating`);
    expect(all.out).not.toContain('cli-away');
    const listed = await run('runners', '--status', 'updating');
    expect(listed.out).toMatch(new RegExp(`^${a.runnerId}\\s+cli-a\\s+updating\\s`, 'm'));
    expect(listed.out).toMatch(new RegExp(`^${b.runnerId}\\s+cli-b\\s+updating\\s`, 'm'));
  });
});

describe('runners update CLI: the runner inside `flotilla up`', () => {
  it('by name: exit 1 with the server’s reason; --all skips it (exit 0 when the rest are sent) and says so', async () => {
    const inside = await FakeRunner.start(t, { name: 'cli-inside' });
    fakes.push(inside);
    await inside.hello({ name: 'cli-inside', selfUpdate: false });
    const one = await run('runners', 'update', 'cli-inside');
    expect(one.code).toBe(1);
    expect(one.err.trim()).toBe(`flotilla: runner cli-inside (${inside.runnerId}) runs inside \`flotilla up\` and cannot update itself: update the package on its machine and start \`flotilla up\` again`);
    const other = await fake('cli-c');
    const all = await run('runners', 'update', '--all', '--to', '0.3.0', '--json');
    expect(all.code).toBe(0);
    const results = (JSON.parse(all.out) as { results: Array<Record<string, unknown>> }).results;
    expect(results.find((r) => r.runnerId === inside.runnerId)).toEqual({ runnerId: inside.runnerId, name: 'cli-inside', skipped: { code: 'cannot_update', message: expect.stringContaining('cannot update itself') } });
    expect((await other.next('runner.update')).version).toBe('0.3.0');
    expect(await inside.none('runner.update', 200)).toBe(true);
    const text = await run('runners', 'update', '--all', '--to', '0.3.0');
    expect(text.out).toContain(`runner cli-inside (${inside.runnerId}): skipped: runner cli-inside (${inside.runnerId}) runs inside \`flotilla up\``);
  });
});

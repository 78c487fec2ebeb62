/**
 * Runners named as `flotilla runners` names them, in the fleet commands through main() against
 * a real server with fake runners on real WebSockets: an unknown runner name (hold, resume,
 * runners show/revoke/set/update, jobs start --runner) is "no runner named ..." with `--json`
 * code `not_found`; `jobs start --runner R --force` on a runner without the job's label says
 * which label it lacks; `flotilla jobs` and `jobs show` name a job's runner.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/test-io.js';
import { FakeRunner, startTestServer, type TestServer } from '../src/server/test-helpers.js';
import type { Job } from '../src/protocol/index.js';

let t: TestServer;
const fakes: FakeRunner[] = [];
const savedEnv = { ...process.env };
const run = (...args: string[]) => runCli([...args, '--server', t.url, '--token', t.admin]);

beforeAll(async () => {
  t = await startTestServer({ dispatchIntervalMs: 100, heartbeatTimeoutMs: 120_000 });
});
beforeEach(() => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
});
afterAll(async () => {
  for (const f of fakes) await f.close();
  await t.close();
  process.env = { ...savedEnv };
});

async function fake(name: string, labels: Record<string, string>): Promise<FakeRunner> {
  const r = await FakeRunner.start(t, { name, labels });
  fakes.push(r);
  await r.hello({ name, labels });
  return r;
}

describe('runners by name', () => {
  it('an unknown runner name: one plain sentence, exit 1; --json code not_found', async () => {
    await fake('r1', {});
    const said = 'flotilla: no runner named "nosuch" (flotilla runners lists them)\n';
    for (const args of [
      ['hold', 'nosuch', '--for', '1h', '--reason', 'x'],
      ['resume', 'nosuch'],
      ['runners', 'show', 'nosuch'],
      ['runners', 'revoke', 'nosuch'],
      ['runners', 'set', 'nosuch', '--capacity', '2'],
      ['runners', 'update', 'nosuch'],
      ['jobs', 'start', '1', '--runner', 'nosuch'],
    ]) {
      expect(await run(...args), args.join(' ')).toMatchObject({ code: 1, out: '', err: said });
      const json = await run(...args, '--json');
      expect(json.code, args.join(' ')).toBe(1);
      expect(JSON.parse(json.err), args.join(' ')).toEqual({ error: { message: 'no runner named "nosuch" (flotilla runners lists them)', code: 'not_found', status: 404 } });
    }
    // A 5,000-character name is not repeated in full.
    const long = await run('hold', 'n'.repeat(5000), '--for', '1h', '--reason', 'x');
    expect(long.err).toBe(`flotilla: no runner named "${'n'.repeat(100)}… (5000 characters)" (flotilla runners lists them)\n`);
  });

  it('jobs start --runner R --force on a runner without the job’s label: names the runner and the label it lacks', async () => {
    const r5 = await fake('r5', { pool: 'b' });
    const res = await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { pool: 'a', os: 'linux' } } });
    expect(res.status).toBe(201);
    const job = (await res.json()) as Job;
    expect(await run('jobs', 'start', String(job.id), '--runner', 'r5', '--force')).toMatchObject({
      code: 1,
      err: `flotilla: runner r5 (id ${r5.runnerId}) does not have the labels pool=a,os=linux the job asks for (it has pool=b)\n`,
    });
    expect(await run('jobs', 'start', String(job.id), '--force')).toMatchObject({
      code: 1,
      err: 'flotilla: no runner connected to this server has the labels pool=a,os=linux the job asks for\n',
    });
    const one = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { pool: 'a' } } })).json()) as Job;
    expect((await run('jobs', 'start', String(one.id), '--runner', String(r5.runnerId), '--force')).err).toBe(
      `flotilla: runner r5 (id ${r5.runnerId}) does not have the label pool=a the job asks for (it has pool=b)\n`,
    );
    await run('jobs', 'cancel', String(job.id));
    await run('jobs', 'cancel', String(one.id));
  });

  it('flotilla jobs and jobs show name the job’s runner, as flotilla runners does', async () => {
    const box = await fake('box-a', { os: 'mac' });
    const job = (await (await t.api('/api/jobs', { json: { agent: 'test-fixer', input: { repo: 'x' }, labels: { os: 'mac' } } })).json()) as Job;
    await box.next('job.assign');
    const list = await run('jobs');
    expect(list.code).toBe(0);
    expect(list.out).toMatch(new RegExp(`^${job.id}\\s+test-fixer\\s+assigned\\s+box-a\\s+\\S+\\s`, 'm'));
    const show = await run('jobs', 'show', String(job.id));
    expect(show.out).toMatch(new RegExp(`^runner: {4}box-a \\(${box.runnerId}\\)$`, 'm'));
    // --json keeps the API's job: the runner id.
    const json = JSON.parse((await run('jobs', '--json')).out) as { jobs: Job[] };
    expect(json.jobs.find((j) => j.id === job.id)?.runnerId).toBe(box.runnerId);
  });
});

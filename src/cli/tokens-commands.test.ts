import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiError, FlotillaClient } from '../client/index.js';
import type { ApiTokenInfo, CreatedApiToken, Job } from '../protocol/index.js';
import { runCli } from './test-io.js';
import { startLocalUp, type LocalUp } from './test-up.js';

// `flotilla tokens list|create|revoke`, conflicting labels on `run`/`runners`/`runner`, and ids
// past 2147483647, against a real `flotilla up --no-runner` (SQLite, HTTP).

let up: LocalUp;
let data: string;
let url: string;
let admin: FlotillaClient;

const run = (...args: string[]) => runCli([...args, '--server', url]);

beforeAll(async () => {
  up = await startLocalUp('flotilla-tokens-cli-');
  ({ data, url } = up);
  admin = new FlotillaClient({ url, token: (await readFile(join(data, 'admin-token'), 'utf8')).trim() });
});

afterAll(async () => {
  expect(await up.stop()).toBe(0);
});

describe('flotilla tokens', () => {
  it('--help of each subcommand shows its arguments, options and environment variables', async () => {
    const group = await runCli(['tokens', '--help']);
    expect(group.code).toBe(0);
    for (const sub of ['list', 'create', 'revoke']) expect(group.out).toMatch(new RegExp(`^  ${sub}\\b`, 'm'));
    const create = await runCli(['tokens', 'create', '--help']);
    expect(create.code).toBe(0);
    for (const e of ['Usage: flotilla tokens create [options] <name>', '--role <role>', '"admin", "member"', 'FLOTILLA_TOKENS_ROLE', '--json', 'FLOTILLA_JSON', 'FLOTILLA_SERVER', 'FLOTILLA_TOKEN']) expect(create.out).toContain(e);
    const revoke = await runCli(['tokens', 'revoke', '--help']);
    expect([revoke.code, revoke.out]).toEqual([0, expect.stringContaining('Usage: flotilla tokens revoke [options] <id>')]);
    const list = await runCli(['tokens', 'list', '--help']);
    expect([list.code, list.out]).toEqual([0, expect.stringContaining('--json')]);
  });

  it('create prints the token once; it works with its role; list shows it without the token; revoke ends it', async () => {
    const made = await run('tokens', 'create', 'ci', '--role', 'member');
    expect(made.code).toBe(0);
    expect(made.out).toMatch(/^fla_[A-Za-z0-9_-]+\n$/);
    const token = made.out.trim();
    const rows = await admin.listApiTokens();
    const row = rows.find((t) => t.name === 'ci')!;
    expect(row.role).toBe('member');
    expect(made.err).toContain(`API token ${row.id} "ci" (member) created; it is shown only now`);
    expect(made.err).toContain(`flotilla tokens revoke ${row.id}`);
    expect(made.err).not.toContain(token);

    // The token reads (member) and may not change anything.
    const member = new FlotillaClient({ url, token });
    expect((await member.listJobs()).jobs).toEqual([]);
    await expect(member.createApiToken({ name: 'x', role: 'admin' })).rejects.toMatchObject({ status: 403 });

    // list: a table, and the API's JSON; never the token.
    const table = await run('tokens');
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/^id\s+name\s+role\s+created$/m);
    expect(table.out).toMatch(new RegExp(`^${row.id}\\s+ci\\s+member\\s+${row.createdAt.replace(/\./g, '\\.')}$`, 'm'));
    expect(table.out).not.toContain(token);
    const json = await run('tokens', 'list', '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toEqual({ tokens: rows });

    // revoke: at once; again → not found, exit 1.
    const gone = await run('tokens', 'revoke', String(row.id));
    expect([gone.code, gone.out, gone.err]).toEqual([0, `API token ${row.id} revoked\n`, '']);
    await expect(member.listJobs()).rejects.toMatchObject({ status: 401 });
    expect((await admin.listApiTokens()).map((t) => t.id)).not.toContain(row.id);
    const again = await run('tokens', 'revoke', String(row.id));
    expect([again.code, again.out, again.err]).toEqual([1, '', `flotilla: no API token ${row.id}: never made, or revoked already (a revoked token is deleted)\n`]);
  });

  it('--json: create prints the API’s CreatedApiToken, revoke {revoked: ID}; FLOTILLA_TOKENS_ROLE gives the role', async () => {
    process.env.FLOTILLA_TOKENS_ROLE = 'admin';
    const made = await run('tokens', 'create', 'deploy bot', '--json');
    delete process.env.FLOTILLA_TOKENS_ROLE;
    expect([made.code, made.err]).toEqual([0, '']);
    const t = JSON.parse(made.out) as CreatedApiToken;
    const row = (await admin.listApiTokens()).find((r) => r.id === t.id) as ApiTokenInfo;
    expect(t).toEqual({ ...row, token: expect.stringMatching(/^fla_/) });
    expect(row).toMatchObject({ name: 'deploy bot', role: 'admin' });

    // That admin token cannot revoke itself (409 from the API), but the first admin can revoke it.
    const self = await runCli(['tokens', 'revoke', String(t.id), '--server', url, '--token', t.token]);
    expect([self.code, self.err]).toEqual([1, 'flotilla: id: this is the token of this request; revoke it with another admin credential\n']);
    const gone = await run('tokens', 'revoke', String(t.id), '--json');
    expect([gone.code, JSON.parse(gone.out)]).toEqual([0, { revoked: t.id }]);
  });

  it('bad arguments: exit 2 naming the problem, nothing sent; a member: exit 1 saying admin', async () => {
    const noRole = await run('tokens', 'create', 'ci');
    expect([noRole.code, noRole.err]).toEqual([2, expect.stringContaining("flotilla: required option '--role <role>' not specified")]);
    const badRole = await run('tokens', 'create', 'ci', '--role', 'owner');
    expect([badRole.code, badRole.err]).toEqual([2, expect.stringContaining("flotilla: option '--role <role>' argument 'owner' is invalid. Allowed choices are admin, member.")]);
    process.env.FLOTILLA_TOKENS_ROLE = 'root';
    const badEnv = await run('tokens', 'create', 'ci');
    delete process.env.FLOTILLA_TOKENS_ROLE;
    expect([badEnv.code, badEnv.err]).toEqual([2, expect.stringContaining("value 'root' from env 'FLOTILLA_TOKENS_ROLE' is invalid")]);
    const blank = await run('tokens', 'create', ' ', '--role', 'member');
    expect([blank.code, blank.err]).toEqual([2, expect.stringContaining('NAME must be 1-100 characters, not only spaces')]);
    const long = await run('tokens', 'create', 'x'.repeat(101), '--role', 'member');
    expect([long.code, long.err]).toEqual([2, expect.stringContaining('NAME must be 1-100 characters')]);
    // the API's own reason for a name of two lines (it was told it must be 1-100 characters)
    const twoLines = await run('tokens', 'create', 'a\nb', '--role', 'member');
    expect([twoLines.code, twoLines.err]).toEqual([2, expect.stringContaining('NAME: must be one line of printable text: found a newline (U+000A)')]);
    for (const id of ['abc', '0', '2147483648']) {
      const r = await run('tokens', 'revoke', id);
      expect([id, r.code, r.err]).toEqual([id, 2, expect.stringContaining(`flotilla: command-argument value '${id}' is invalid for argument 'id'. token id must be a whole number from 1 to 2147483647`)]);
    }
    expect((await admin.listApiTokens()).map((t) => t.name)).toEqual(['admin']);

    const member = await admin.createApiToken({ name: 'reader', role: 'member' });
    const refused = await runCli(['tokens', 'create', 'x', '--role', 'admin', '--server', url, '--token', member.token]);
    expect([refused.code, refused.err]).toEqual([1, 'flotilla: POST /api/tokens changes things: it needs an admin (members may only read)\n']);
    const listed = await runCli(['tokens', '--server', url, '--token', member.token]);
    expect([listed.code, listed.out, listed.err]).toEqual([1, '', 'flotilla: this action needs an admin API token\n']);
    await admin.revokeApiToken(member.id);
  });
});

describe('conflicting labels are refused, naming the key', () => {
  it('run: a key twice, or --role with another role= label → exit 2, nothing created', async () => {
    const twice = await run('run', 'test-fixer', '--detach', '--labels', 'zone=mars,zone=venus');
    expect([twice.code, twice.err]).toEqual([2, expect.stringContaining('label key "zone" is given twice (zone=mars, zone=venus): give each key once')]);
    const both = await run('run', 'test-fixer', '--detach', '--role', 'build', '--labels', 'role=gpu');
    expect([both.code, both.err]).toEqual([2, 'flotilla: --role build conflicts with --labels role=gpu: give the role once\n']);
    process.env.FLOTILLA_RUN_LABELS = 'os=linux,role=gpu';
    process.env.FLOTILLA_RUN_ROLE = 'build';
    const viaEnv = await run('run', 'test-fixer', '--detach');
    delete process.env.FLOTILLA_RUN_LABELS;
    delete process.env.FLOTILLA_RUN_ROLE;
    expect([viaEnv.code, viaEnv.err]).toEqual([2, 'flotilla: --role build conflicts with --labels role=gpu: give the role once\n']);
    expect((await admin.listJobs()).jobs).toEqual([]);
  });

  it('run: --role with the same role= label is one role: the selector has it once', async () => {
    const same = await run('run', 'test-fixer', '{"repo":"examples/calc"}', '--detach', '--json', '--role', 'build', '--labels', 'role=build,os=linux');
    expect(same.code).toBe(0);
    const { job } = JSON.parse(same.out) as { job: Job };
    const agent = (await admin.listAgents()).find((a) => a.name === 'test-fixer')!;
    expect(job.selector).toEqual({ ...agent.runnerLabels, os: 'linux', role: 'build' });
    await admin.cancelJob(job.id);
  });

  it('FLOTILLA_LABELS is the runner\'s own labels: it neither narrows a run nor binds a new registration token', async () => {
    process.env.FLOTILLA_LABELS = 'gpu=a100';
    try {
      const r = await run('run', 'test-fixer', '{"repo":"examples/calc"}', '--detach', '--json');
      expect(r.code).toBe(0);
      const { job } = JSON.parse(r.out) as { job: Job };
      const agent = (await admin.listAgents()).find((a) => a.name === 'test-fixer')!;
      expect(job.selector).toEqual(agent.runnerLabels);
      await admin.cancelJob(job.id);
      const t = await run('runners', 'token', 'create', '--json');
      expect(t.code).toBe(0);
      const { id, labels } = JSON.parse(t.out) as { id: number; labels: Record<string, string> };
      expect(labels).toEqual({});
      const listed = JSON.parse((await run('runners', 'token', 'list', '--json')).out) as { tokens: Array<{ id: number; labels: Record<string, string> }> };
      expect(listed.tokens.find((x) => x.id === id)?.labels).toEqual({});
      // --json says the binding labels it was made with, as the list does (it left them out: a fresh tester)
      const labeled = await run('runners', 'token', 'create', '--labels', 'a=b', '--json');
      expect((JSON.parse(labeled.out) as { labels: Record<string, string> }).labels).toEqual({ a: 'b' });
    } finally {
      delete process.env.FLOTILLA_LABELS;
    }
  });

  it('runners token create, runners list, runner: a key twice / --role against role= → exit 2', async () => {
    const token = await run('runners', 'token', 'create', '--labels', 'a=1,a=2');
    expect([token.code, token.err]).toEqual([2, expect.stringContaining('label key "a" is given twice (a=1, a=2): give each key once')]);
    const same = await run('runners', 'token', 'create', '--labels', 'a=1,a=1');
    expect([same.code, same.err]).toEqual([2, expect.stringContaining('label key "a" is given twice (a=1, a=1)')]);
    const list = await run('runners', '--role', 'build', '--label', 'role=gpu');
    expect([list.code, list.err]).toEqual([2, 'flotilla: --role build conflicts with --label role=gpu: give the role once\n']);
    const runner = await runCli(['runner', '--server', url, '--token', 'flr_x', '--work-dir', data, '--role', 'build', '--labels', 'role=gpu']);
    expect([runner.code, runner.err]).toEqual([2, 'flotilla: --role build conflicts with --labels role=gpu: give the role once\n']);
  });

  it('the API: POST /api/jobs role against labels.role → 400 naming role; GET /api/runners likewise; label twice in ?label', async () => {
    await expect(admin.createJob({ agent: 'test-fixer', input: { repo: 'examples/calc' }, role: 'build', labels: { role: 'gpu' } })).rejects.toMatchObject({
      status: 400,
      code: 'invalid_request',
      message: 'role: role "build" conflicts with label role=gpu: give the role once',
      field: 'role',
    });
    const token = (await readFile(join(data, 'admin-token'), 'utf8')).trim();
    const get = async (q: string) => {
      const res = await fetch(`${url}/api/runners?${q}`, { headers: { authorization: `Bearer ${token}` } });
      return [res.status, ((await res.json()) as { error?: unknown }).error];
    };
    expect(await get('role=build&label=role=gpu')).toEqual([400, { code: 'invalid_request', message: 'role: role "build" conflicts with label role=gpu: give the role once', field: 'role' }]);
    expect(await get('label=zone=mars,zone=venus')).toEqual([400, { code: 'invalid_request', message: 'label: label key "zone" is given twice (zone=mars, zone=venus): give each key once', field: 'label' }]);
    expect(await get('role=build&label=role=build')).toEqual([200, undefined]);
    expect((await admin.listJobs()).jobs.filter((j) => j.status !== 'cancelled')).toEqual([]);
  });
});

describe('ids past 2147483647', () => {
  it('the CLI refuses them before asking (exit 2); the API answers 400 naming the field, which the CLI prints (exit 1)', async () => {
    for (const args of [['jobs', 'show', '2147483648'], ['jobs', 'cancel', '2147483648'], ['budget', '2147483648'], ['jobs', '--before', '2147483648'], ['tasks', 'show', '2147483648']]) {
      const r = await run(...args);
      expect([args.join(' '), r.code, r.err]).toEqual([args.join(' '), 2, expect.stringMatching(/id must be a whole number from 1 to 2147483647/)]);
    }
    const show = await run('runners', 'show', '2147483648');
    expect([show.code, show.err]).toEqual([1, 'flotilla: id: must be an integer from 1 to 2147483647 (a runner id)\n']);
    await expect(admin.getJob(2147483648)).rejects.toEqual(new ApiError(400, 'invalid_request', 'id: must be an integer from 1 to 2147483647 (a job id)', 'id'));
  });
});

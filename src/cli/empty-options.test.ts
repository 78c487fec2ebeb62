import { describe, it, expect, beforeAll, afterAll, afterEach } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from './main.js';
import { FlotillaClient } from '../client/index.js';
import { recordingIO, runCli } from './test-io.js';
import { startLocalUp, type LocalUp } from './test-up.js';

// A token/URL/folder option given empty — `--parent-token ""`, or its variable set to nothing
// (a script's `$FLOTILLA_JOB_TOKEN` that expanded to nothing) — is a usage error (exit 2) naming
// the flag and the variable, never "unset": `run --parent-token ""` made a new ROOT job with
// the admin token, outside the intended tree.

let up: LocalUp;
let url: string;
let admin: FlotillaClient;
const EMPTY_VARS = ['FLOTILLA_PARENT_TOKEN', 'FLOTILLA_TOKEN', 'FLOTILLA_SERVER', 'FLOTILLA_URL', 'FLOTILLA_JOB_TOKEN', 'FLOTILLA_RUNNER_TOKEN', 'FLOTILLA_REPO_BASE', 'FLOTILLA_JOB_ID', 'FLOTILLA_DATA', 'FLOTILLA_JOB_AGENT', 'FLOTILLA_RUN_LABELS', 'FLOTILLA_EFFORT', 'FLOTILLA_RUNNER_LABELS', 'FLOTILLA_RUNNER_TOKEN_LABELS', 'FLOTILLA_RUNNER'];

beforeAll(async () => {
  up = await startLocalUp('flotilla-empty-opts-');
  url = up.url;
  admin = new FlotillaClient({ url, token: (await readFile(join(up.data, 'admin-token'), 'utf8')).trim() });
});

afterAll(async () => {
  expect(await up.stop()).toBe(0);
});

afterEach(() => {
  for (const k of EMPTY_VARS) delete process.env[k];
});

/** How many jobs the server holds. */
const jobCount = async () => (await admin.listJobs({})).jobs.length;

describe('empty token/URL/folder options', () => {
  it('run --parent-token "": exit 2 naming the flag, no job created (it used to be a root job made with the admin token)', async () => {
    const before = await jobCount();
    const r = await runCli(['run', 'test-fixer', '{"repo":"x"}', '--parent-token', '', '--budget', '0.1', '--detach', '--server', url]);
    expect([r.code, r.err]).toEqual([2, 'flotilla: --parent-token is empty: give a value, or leave --parent-token out\n']);
    expect(r.out).toBe('');
    expect(await jobCount()).toBe(before);
  });

  it('FLOTILLA_PARENT_TOKEN set to "": exit 2 naming the variable; --json: one JSON line, code usage', async () => {
    const before = await jobCount();
    process.env.FLOTILLA_PARENT_TOKEN = '';
    const r = await runCli(['run', 'test-fixer', '{"repo":"x"}', '--budget', '0.1', '--detach', '--server', url]);
    expect([r.code, r.err]).toEqual([2, 'flotilla: --parent-token is empty (FLOTILLA_PARENT_TOKEN is set to ""): give a value, or unset FLOTILLA_PARENT_TOKEN\n']);
    const j = await runCli(['run', 'test-fixer', '{"repo":"x"}', '--budget', '0.1', '--detach', '--json', '--server', url]);
    expect(j.code).toBe(2);
    expect(j.err.split('\n')).toEqual([JSON.stringify({ error: { message: '--parent-token is empty (FLOTILLA_PARENT_TOKEN is set to ""): give a value, or unset FLOTILLA_PARENT_TOKEN', code: 'usage' } }), '']);
    // blanks only count as empty too
    process.env.FLOTILLA_PARENT_TOKEN = '  ';
    expect((await runCli(['run', 'test-fixer', '{"repo":"x"}', '--detach', '--server', url])).code).toBe(2);
    expect(await jobCount()).toBe(before);
  });

  it('--parent-token with FLOTILLA_URL set to "": exit 2 naming FLOTILLA_URL (it fell back to FLOTILLA_SERVER)', async () => {
    process.env.FLOTILLA_URL = '';
    process.env.FLOTILLA_SERVER = url;
    const r = await runCli(['run', 'test-fixer', '{"repo":"x"}', '--parent-token', 'flj_x', '--detach']);
    expect([r.code, r.err]).toEqual([2, 'flotilla: FLOTILLA_URL (the server of --parent-token) is set to "": give the control plane URL, or unset FLOTILLA_URL to use --server / FLOTILLA_SERVER\n']);
  });

  it('run --local --parent-token: exit 2 (the token was silently ignored and the job ran locally as a root job)', async () => {
    const data = await mkdtemp(join(tmpdir(), 'flotilla-empty-local-'));
    try {
      const r = await runCli(['run', '--local', 'no-such-agent', '{}', '--parent-token', 'flj_x', '--data', data]);
      expect([r.code, r.err]).toEqual([2, 'flotilla: --parent-token cannot be used with --local (it starts its own server, where that job does not exist)\n']);
      expect(r.out).toBe('');
    } finally {
      await rm(data, { recursive: true, force: true });
    }
  });

  it('FLOTILLA_TOKEN set to "" is refused, not replaced by the local admin token; so are --token "" and --server ""', async () => {
    process.env.FLOTILLA_TOKEN = '';
    const env = await runCli(['jobs', '--server', url]);
    expect([env.code, env.err]).toEqual([2, 'flotilla: --token is empty (from --token or FLOTILLA_TOKEN): give a value, or leave it out\n']);
    delete process.env.FLOTILLA_TOKEN;
    const cli = await runCli(['jobs', '--token', '', '--server', url]);
    expect([cli.code, cli.err]).toEqual([2, 'flotilla: --token is empty (from --token or FLOTILLA_TOKEN): give a value, or leave it out\n']);
    const server = await runCli(['jobs', '--server', '']);
    expect([server.code, server.err]).toEqual([2, 'flotilla: --server is empty (from --server or FLOTILLA_SERVER): give a value, or leave it out\n']);
    // run names where it came from exactly
    process.env.FLOTILLA_SERVER = '';
    const run = await runCli(['run', 'test-fixer', '{"repo":"x"}', '--detach']);
    expect([run.code, run.err]).toEqual([2, 'flotilla: --server is empty (FLOTILLA_SERVER is set to ""): give a value, or unset FLOTILLA_SERVER\n']);
  });

  it('--data "" (the current folder) is refused where the admin token would be read from it', async () => {
    const r = await runCli(['jobs', '--data', '']);
    expect([r.code, r.err]).toEqual([2, 'flotilla: --data is empty (from --data or FLOTILLA_DATA): give a value, or leave it out\n']);
  });

  it('--data "" with a token (so unused) is refused by every client command, before the server is asked', async () => {
    for (const args of [['jobs'], ['costs'], ['runners'], ['models']]) {
      const r = await runCli([...args, '--token', 'fla_x', '--server', 'http://127.0.0.1:9', '--data', '']);
      expect([r.code, r.err], args.join(' ')).toEqual([2, 'flotilla: --data is empty (from --data or FLOTILLA_DATA): give a value, or leave it out\n']);
    }
  });

  it('mcp --url "": exit 2 naming --url (it was taken as not given)', async () => {
    const r = await runCli(['mcp', '--url', '']);
    expect([r.code, r.err]).toEqual([2, 'flotilla: --url is empty: give a value, or leave --url out\n']);
    process.env.FLOTILLA_URL = url;
    process.env.FLOTILLA_JOB_TOKEN = '';
    const t = await runCli(['mcp']);
    expect([t.code, t.err]).toEqual([2, 'flotilla: --job-token is empty (FLOTILLA_JOB_TOKEN is set to ""): give a value, or unset FLOTILLA_JOB_TOKEN\n']);
  });

  it('mcp --job-id "" / FLOTILLA_JOB_ID="" / blank: exit 2 naming the flag and the variable (it was taken as no job id)', async () => {
    // Before the missing token: the empty option is the first usage error.
    const cli = await runCli(['mcp', '--server', url, '--job-id', '']);
    expect([cli.code, cli.err]).toEqual([2, 'flotilla: --job-id is empty: give a value, or leave --job-id out\n']);
    // With a token and a URL it started serving (until stdin closed) without a job id: race it.
    process.env.FLOTILLA_JOB_TOKEN = 'flj_x';
    process.env.FLOTILLA_JOB_ID = '';
    const io = recordingIO();
    const done = main(['node', 'flotilla', 'mcp', '--server', url], io);
    const code = await Promise.race([done, new Promise<string>((r) => setTimeout(() => r('still serving after 5 s'), 5000))]);
    expect([code, io.err()]).toEqual([2, 'flotilla: --job-id is empty (FLOTILLA_JOB_ID is set to ""): give a value, or unset FLOTILLA_JOB_ID\n']);
    process.env.FLOTILLA_JOB_ID = '  ';
    expect((await runCli(['mcp', '--server', url])).err).toBe('flotilla: --job-id is empty (FLOTILLA_JOB_ID is set to ""): give a value, or unset FLOTILLA_JOB_ID\n');
  });

  it('mcp --job-id past the largest job id (2147483647), zero, signed or not digits: exit 2 naming flag, variable and bounds', async () => {
    process.env.FLOTILLA_JOB_TOKEN = 'flj_x';
    for (const bad of ['2147483648', '999999999999999', '0', '-1', '+1', '01', '1e3', 'x']) {
      const r = await runCli(['mcp', '--server', url, '--job-id', bad]);
      expect([bad, r.code, r.err]).toEqual([bad, 2, `flotilla: flotilla mcp: FLOTILLA_JOB_ID / --job-id must be a job id, a whole number from 1 to 2147483647, got ${JSON.stringify(bad)}\n`]);
    }
  });

  it('budget --data "" (or FLOTILLA_DATA="") with a token: exit 2 naming it, nothing asked of the server (it was let through, unused)', async () => {
    const job = await admin.createJob({ agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 1 });
    const token = (await readFile(join(up.data, 'admin-token'), 'utf8')).trim();
    const cli = await runCli(['budget', String(job.id), '--add', '1', '--data', '', '--token', token, '--server', url]);
    expect([cli.code, cli.err, cli.out]).toEqual([2, 'flotilla: --data is empty: give a value, or leave --data out\n', '']);
    process.env.FLOTILLA_DATA = '';
    const env = await runCli(['budget', String(job.id), '--add', '1', '--token', token, '--server', url]);
    expect([env.code, env.err]).toEqual([2, 'flotilla: --data is empty (FLOTILLA_DATA is set to ""): give a value, or unset FLOTILLA_DATA\n']);
    expect((await admin.getBudget(job.id)).budget.limitMicros).toBe(1_000_000); // not topped up
    // --server "" / FLOTILLA_SERVER="" are named by where they came from
    process.env.FLOTILLA_SERVER = '';
    delete process.env.FLOTILLA_DATA;
    const server = await runCli(['budget', String(job.id), '--token', token]);
    expect([server.code, server.err]).toEqual([2, 'flotilla: --server is empty (FLOTILLA_SERVER is set to ""): give a value, or unset FLOTILLA_SERVER\n']);
    await admin.cancelJob(job.id);
  });

  it('up --host "": exit 2 (Node listens on every interface for host "")', async () => {
    const io = recordingIO();
    const done = main(['node', 'flotilla', 'up', '--host', '', '--port', '0', '--no-runner', '--data', join(up.data, 'other')], io);
    // Without the check it starts (on every interface) and runs until Ctrl-C: stop it then.
    const early = await Promise.race([done, new Promise<null>((r) => setTimeout(() => r(null), 8000))]);
    if (early === null) io.signals.emit('SIGINT');
    expect([await done, io.err()]).toEqual([2, 'flotilla: --host is empty: give a value, or leave --host out\n']);
    expect(io.out()).toBe('');
  });

  it('runner --token "" / FLOTILLA_RUNNER_TOKEN="" / --repo-base "": exit 2 naming each (they were taken as unset, the current folder)', async () => {
    const runner = async (args: string[]) => {
      const io = recordingIO();
      const done = main(['node', 'flotilla', 'runner', '--server', url, '--work-dir', join(up.data, 'runner-empty'), ...args], io);
      // Without the check it starts and runs until Ctrl-C: stop it then.
      const early = await Promise.race([done, new Promise<null>((r) => setTimeout(() => r(null), 8000))]);
      if (early === null) io.signals.emit('SIGINT');
      return [await done, io.err()];
    };
    expect(await runner(['--token', ''])).toEqual([2, 'flotilla: --token is empty: give a value, or leave --token out\n']);
    process.env.FLOTILLA_RUNNER_TOKEN = '';
    expect(await runner([])).toEqual([2, 'flotilla: --token is empty (FLOTILLA_RUNNER_TOKEN is set to ""): give a value, or unset FLOTILLA_RUNNER_TOKEN\n']);
    delete process.env.FLOTILLA_RUNNER_TOKEN;
    expect(await runner(['--repo-base', ''])).toEqual([2, 'flotilla: --repo-base is empty: give a value, or leave --repo-base out\n']);
  });
  it('jobs --agent "" / FLOTILLA_JOB_AGENT="": exit 2 naming it (it listed every job)', async () => {
    const cli = await runCli(['jobs', '--agent', '', '--server', url]);
    expect([cli.code, cli.err, cli.out]).toEqual([2, 'flotilla: --agent is empty: give a value, or leave --agent out\n', '']);
    process.env.FLOTILLA_JOB_AGENT = '';
    const env = await runCli(['jobs', '--server', url]);
    expect([env.code, env.err, env.out]).toEqual([2, 'flotilla: --agent is empty (FLOTILLA_JOB_AGENT is set to ""): give a value, or unset FLOTILLA_JOB_AGENT\n', '']);
  });

  it('run --labels "" / FLOTILLA_RUN_LABELS="" / --effort "" / FLOTILLA_EFFORT="": exit 2 naming each, no job created', async () => {
    const before = await jobCount();
    const run = (...args: string[]) => runCli(['run', 'test-fixer', '{"repo":"x"}', '--budget', '0.1', '--detach', '--server', url, ...args]);
    const labels = await run('--labels', '');
    expect([labels.code, labels.err, labels.out]).toEqual([2, 'flotilla: --labels is empty: give a value, or leave --labels out\n', '']);
    // blanks and bare commas name no label either
    expect((await run('--labels', ' , ')).err).toBe('flotilla: --labels is empty: give a value, or leave --labels out\n');
    const effort = await run('--effort', '');
    expect([effort.code, effort.err, effort.out]).toEqual([2, 'flotilla: --effort is empty: give a value, or leave --effort out\n', '']);
    process.env.FLOTILLA_RUN_LABELS = '';
    const envLabels = await run();
    expect([envLabels.code, envLabels.err]).toEqual([2, 'flotilla: --labels is empty (FLOTILLA_RUN_LABELS is set to ""): give a value, or unset FLOTILLA_RUN_LABELS\n']);
    delete process.env.FLOTILLA_RUN_LABELS;
    process.env.FLOTILLA_EFFORT = '';
    const envEffort = await run();
    expect([envEffort.code, envEffort.err]).toEqual([2, 'flotilla: --effort is empty (FLOTILLA_EFFORT is set to ""): give a value, or unset FLOTILLA_EFFORT\n']);
    expect(await jobCount()).toBe(before);
  });

  it('runners --label "" / FLOTILLA_RUNNER_LABELS="": exit 2 naming it (it listed every runner)', async () => {
    const cli = await runCli(['runners', '--label', '', '--server', url]);
    expect([cli.code, cli.err, cli.out]).toEqual([2, 'flotilla: --label is empty: give a value, or leave --label out\n', '']);
    process.env.FLOTILLA_RUNNER_LABELS = '';
    const env = await runCli(['runners', '--server', url]);
    expect([env.code, env.err, env.out]).toEqual([2, 'flotilla: --label is empty (FLOTILLA_RUNNER_LABELS is set to ""): give a value, or unset FLOTILLA_RUNNER_LABELS\n', '']);
  });

  it('runners token create --labels "" / FLOTILLA_RUNNER_TOKEN_LABELS="": exit 2, no token made (it made one with no binding labels)', async () => {
    const before = (await admin.listRunnerTokens({ all: true })).length;
    const cli = await runCli(['runners', 'token', 'create', '--labels', '', '--server', url]);
    expect([cli.code, cli.err, cli.out]).toEqual([2, 'flotilla: --labels is empty: give a value, or leave --labels out\n', '']);
    process.env.FLOTILLA_RUNNER_TOKEN_LABELS = '';
    const env = await runCli(['runners', 'token', 'create', '--json', '--server', url]);
    expect(env.code).toBe(2);
    expect(env.err.split('\n')).toEqual([JSON.stringify({ error: { message: '--labels is empty (FLOTILLA_RUNNER_TOKEN_LABELS is set to ""): give a value, or unset FLOTILLA_RUNNER_TOKEN_LABELS', code: 'usage' } }), '']);
    expect(env.out).toBe('');
    expect((await admin.listRunnerTokens({ all: true })).length).toBe(before);
  });

  it('jobs start --runner "" / FLOTILLA_RUNNER="": exit 2 naming it (the job was placed on any runner)', async () => {
    const job = await admin.createJob({ agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 1 });
    try {
      const cli = await runCli(['jobs', 'start', String(job.id), '--runner', '', '--server', url]);
      expect([cli.code, cli.err, cli.out]).toEqual([2, 'flotilla: --runner is empty: give a value, or leave --runner out\n', '']);
      process.env.FLOTILLA_RUNNER = '';
      const env = await runCli(['jobs', 'start', String(job.id), '--server', url]);
      expect([env.code, env.err]).toEqual([2, 'flotilla: --runner is empty (FLOTILLA_RUNNER is set to ""): give a value, or unset FLOTILLA_RUNNER\n']);
    } finally {
      await admin.cancelJob(job.id);
    }
  });
});

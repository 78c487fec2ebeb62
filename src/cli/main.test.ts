import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from './main.js';
import { recordingIO } from './test-io.js';

const cli = (...args: string[]) => ['node', 'flotilla', ...args];

let data: string;
const savedEnv = { ...process.env };

beforeEach(async () => {
  data = await mkdtemp(join(tmpdir(), 'flotilla-cli-'));
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  process.env.FLOTILLA_DATA = data;
});

afterEach(async () => {
  process.env = { ...savedEnv };
  await rm(data, { recursive: true, force: true });
});

describe('flotilla --help', () => {
  it('top level lists every command, exit 0', async () => {
    const io = recordingIO();
    expect(await main(cli('--help'), io)).toBe(0);
    for (const c of ['run', 'jobs', 'runners', 'agents', 'up', 'runner']) expect(io.out()).toMatch(new RegExp(`^  ${c} `, 'm'));
  });

  const commands: Array<[string[], string[]]> = [
    [['run'], ['--budget', '--labels', '--priority', '--json', '--detach', '--local', 'FLOTILLA_SERVER', 'FLOTILLA_TOKEN', 'FLOTILLA_DATA', 'FLOTILLA_LABELS', 'FLOTILLA_JSON']],
    [['jobs'], ['list', 'show', 'cancel']],
    [['jobs', 'list'], ['--status', '--limit', 'FLOTILLA_SERVER']],
    [['jobs', 'show'], ['<id>', 'FLOTILLA_TOKEN']],
    [['jobs', 'cancel'], ['<id>']],
    [['runners'], ['list', 'token']],
    [['runners', 'token', 'create'], ['--labels', '--ttl']],
    [['agents'], ['list']],
    [['up'], ['--host', '--port', '--data', '--agents', '--no-runner', '--labels', '--capacity', 'FLOTILLA_PORT']],
    [['runner'], ['--server', '--token', '--labels', '--name', '--capacity', '--work-dir', 'FLOTILLA_RUNNER_TOKEN']],
  ];
  for (const [words, expected] of commands) {
    it(`${words.join(' ')} --help shows its options`, async () => {
      const io = recordingIO();
      expect(await main(cli(...words, '--help'), io)).toBe(0);
      expect(io.out()).toContain(`Usage: flotilla ${words.join(' ')}`);
      for (const e of expected) expect(io.out()).toContain(e);
    });
  }

  it('--version prints the package version', async () => {
    const io = recordingIO();
    expect(await main(cli('--version'), io)).toBe(0);
    expect(io.out().trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('bad arguments: non-zero exit, the message names the problem', () => {
  async function fails(args: string[], pattern: RegExp, code = 2): Promise<string> {
    const io = recordingIO();
    expect(await main(cli(...args), io)).toBe(code);
    expect(io.err()).toMatch(pattern);
    expect(io.out()).toBe('');
    return io.err();
  }

  it('unknown command', () => fails(['frobnicate'], /unknown command 'frobnicate'/));
  it('unknown option', () => fails(['run', 'test-fixer', '--budjet', '1'], /unknown option '--budjet'[\s\S]*--budget/));
  it('missing agent', () => fails(['run'], /missing required argument 'agent'/));
  it('budget not a number', () => fails(['run', 'test-fixer', '--budget', 'lots'], /--budget <usd>.*'lots'.*positive number of US dollars/));
  it('budget zero', () => fails(['run', 'test-fixer', '--budget', '0'], /--budget.*positive number/));
  it('budget from a bad env var names the variable', async () => {
    process.env.FLOTILLA_BUDGET = 'x';
    await fails(['run', 'test-fixer'], /FLOTILLA_BUDGET.*positive number/);
  });
  it('labels malformed', () => fails(['run', 'test-fixer', '--labels', 'os'], /--labels.*label "os" must look like key=value/));
  it('priority out of range', () => fails(['run', 'test-fixer', '--priority', '500'], /priority must be a whole number from -100 to 100/));
  it('input not JSON', () => fails(['run', 'test-fixer', '{repo:1}'], /INPUT_JSON is not valid JSON/));
  it('input not an object', () => fails(['run', 'test-fixer', '[1,2]'], /INPUT_JSON must be a JSON object/));
  it('job id not a number', () => fails(['jobs', 'show', 'seven'], /job id must be a whole number/));
  it('--status not a status', () => fails(['jobs', '--status', 'done'], /--status.*'done'.*Allowed choices are queued/));
  it('--detach with --local', () => fails(['run', 'test-fixer', '--local', '--detach'], /--detach cannot be used with --local/));
  it('capacity out of range', () => fails(['up', '--capacity', '9'], /capacity must be a whole number from 1 to 4/));
  it('no token anywhere', () => fails(['jobs'], new RegExp(`no API token: pass --token, set FLOTILLA_TOKEN.*${data}/admin-token`), 1));
  it('runner with a repo base that is not a folder', () => fails(['runner', '--server', 'http://127.0.0.1:1', '--token', 't', '--work-dir', data, '--repo-base', '/nonexistent-flotilla'], /--repo-base \(FLOTILLA_REPO_BASE\): \/nonexistent-flotilla is not a folder/));
  it('a token that cannot be a bearer token: refused without showing it', async () => {
    const err = await fails(['jobs', '--token', 'fla_se\ncret'], /^flotilla: token holds characters an HTTP bearer token may not/);
    expect(err).not.toContain('cret');
  });
  it('a server URL with a password: refused without showing it', async () => {
    const err = await fails(['jobs', '--server', 'http://user:hunter2@127.0.0.1:1', '--token', 't'], /--server: url must not hold a user name or password/);
    expect(err).not.toContain('hunter2');
  });
  it('bad server URL', () => fails(['jobs', '--server', 'localhost:8787', '--token', 't'], /--server: url "localhost:8787" must start with http/));

  it('unreachable server: exit 1 with a hint, token not shown', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const err = await fails(['agents', '--server', `http://127.0.0.1:${port}`, '--token', 'fla_supersecretvalue123'], /cannot reach the Flotilla server.*flotilla up/, 1);
    expect(err).not.toContain('supersecret');
  });
});

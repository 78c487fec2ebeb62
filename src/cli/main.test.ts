import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from './main.js';
import { applyBooleanEnv, parseBoolEnv } from './options.js';
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
    for (const c of ['run', 'jobs', 'runners', 'tokens', 'agents', 'up', 'runner']) expect(io.out()).toMatch(new RegExp(`^  ${c} `, 'm'));
  });

  const commands: Array<[string[], string[]]> = [
    [['run'], ['--budget', '--labels', '--priority', '--json', '--detach', '--local', 'FLOTILLA_SERVER', 'FLOTILLA_TOKEN', 'FLOTILLA_DATA', 'FLOTILLA_RUN_LABELS', 'FLOTILLA_JSON', 'FLOTILLA_DETACH', 'FLOTILLA_LOCAL']],
    [['jobs'], ['list', 'show', 'cancel']],
    [['jobs', 'list'], ['--status', '--limit', 'FLOTILLA_SERVER']],
    [['jobs', 'show'], ['<id>', 'FLOTILLA_TOKEN']],
    [['jobs', 'cancel'], ['<id>']],
    [['runners'], ['list', 'token']],
    [['runners', 'token', 'create'], ['--labels', '--ttl']],
    [['agents'], ['list']],
    // up: its provider settings too, which are environment only (fresh tester found them in the README alone)
    [['up'], ['--host', '--port', '--data', '--agents', '--no-runner', '--labels', '--capacity', 'FLOTILLA_PORT', 'ANTHROPIC_API_KEY', 'OPENAI_BASE_URL', 'FLOTILLA_CONFIG', 'FLOTILLA_PRICES_FILE', 'DATABASE_URL']],
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
  it('a mandatory option left out: the message names its variable too (it named the flag alone: fresh tester)', async () => {
    expect(await fails(['tokens', 'create'], /required option '--role <role>' not specified \(or FLOTILLA_TOKENS_ROLE\)/)).toMatch(/\n\(see flotilla tokens create --help\)\n$/);
    await fails(['hold', 'r1', '--reason', 'x'], /required option '--for <duration>' not specified \(or FLOTILLA_HOLD_FOR\)/);
    // the checks a command makes itself name them too (a fresh tester)
    await fails(['tiers', 'set', 'x'], /--model is required \(or FLOTILLA_TIER_MODEL\)/);
    await fails(['models', 'price', 'foo', '--input', '1'], /\(USD per million tokens; or FLOTILLA_PRICE_INPUT and FLOTILLA_PRICE_OUTPUT\), or --delete \(FLOTILLA_PRICE_DELETE\)/);
    // --json: the same message in the error line
    const json = JSON.parse(await fails(['tokens', 'create', '--json'], /^\{/)) as { error: { message: string } };
    expect(json.error.message).toBe("required option '--role <role>' not specified (or FLOTILLA_TOKENS_ROLE)");
  });
  it("after a bad argument, the command's own help is named (it said \"(add --help for usage)\", read as a command named add)", async () => {
    expect(await fails(['budget', '5', '--add', '-1'], /--add must be a positive number/)).toMatch(/\n\(see flotilla budget --help\)\n$/);
    expect(await fails(['jobs', 'show', 'abc'], /job id must be a whole number/)).toMatch(/\n\(see flotilla jobs show --help\)\n$/);
  });
  it('--json: an API error\'s field is a key of its own, not repeated in the message', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(409, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'not_resumable', message: 'job 26 is paused for budget', field: 'resumeJobId' } }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const text = recordingIO();
      expect(await main(cli('run', 'test-fixer', '--resume', '26', '--server', url, '--token', 'fla_x'), text)).toBe(1);
      expect(text.err()).toBe('flotilla: job 26 is paused for budget (field: resumeJobId)\n');
      const json = recordingIO();
      expect(await main(cli('run', 'test-fixer', '--resume', '26', '--server', url, '--token', 'fla_x', '--json'), json)).toBe(1);
      expect(JSON.parse(json.err())).toMatchObject({ error: { message: 'job 26 is paused for budget', code: 'not_resumable', field: 'resumeJobId' } });
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
  it('unknown option', () => fails(['run', 'test-fixer', '--budjet', '1'], /unknown option '--budjet'[\s\S]*--budget/));
  it('an option of one value given twice (fresh-user finding: `budget 1 --add 1 --add 2` added $2, exit 0), naming neither value (a --token is a secret)', async () => {
    expect(await fails(['budget', '1', '--add', '1', '--add', '2'], /^flotilla: option '--add <usd>' given twice: give it once\n/)).not.toMatch(/1, |then 2/);
    const out = await fails(['runner', '--server', 'http://127.0.0.1:9', '--token', 'flr_secretsecretsecret1', '--token', 'flr_secretsecretsecret2'], /^flotilla: option '--token <token>' given twice: give it once\n/);
    expect(out).not.toMatch(/secret/);
    await fails(['costs', '--since', '7d', '--by', 'job', '--since', '1d'], /^flotilla: option '--since <when>' given twice: give it once/);
  });
  it('--since with spaces around it is refused, as ids and amounts with spaces are (fresh-user finding: "7d " was read as 7d)', async () => {
    for (const since of ['7d ', ' 7d', '2026-11-01 ']) await fails(['costs', '--since', since], /--since must be like 30m, 12h, 7d, 2w \(1 to 6 digits\) or an ISO-8601 date/);
  });
  it('a list option (--key <key...>) and a flag may repeat', async () => {
    // --help ends the parse after the options: exit 0 means they were taken
    for (const args of [['tasks', 'create', 'x', '--key', 'a', '--key', 'b', '--help'], ['jobs', '--json', '--json', '--help']]) {
      const io = recordingIO();
      expect(await main(['node', 'flotilla', ...args], io), io.err()).toBe(0);
    }
  });
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
  it('tasks create --input not an object: names --input', () => fails(['tasks', 'create', 'issue-worker', '--input', '[1]', '--token', 't'], /--input must be a JSON object/));
  it('--server not a URL: says so, not "no API token"', () => fails(['jobs', '--server', 'notaurl'], /--server: url "notaurl" must start with http:\/\/ or https:\/\/ \(from --server or FLOTILLA_SERVER\)/));
  it('job id not a number', () => fails(['jobs', 'show', 'seven'], /job id must be a whole number/));
  it('--status not a status', () => fails(['jobs', '--status', 'done'], /--status.*'done'.*Allowed choices are queued/));
  it('--detach with --local', () => fails(['run', 'test-fixer', '--local', '--detach'], /--detach cannot be used with --local/));
  it('capacity out of range', () => fails(['up', '--capacity', '9'], /capacity must be a whole number from 1 to 4/));
  it('heartbeat timeout under twice the interval: exit 2, naming both', () => fails(['up', '--heartbeat-interval', '5000', '--heartbeat-timeout', '9999'], /--heartbeat-timeout \(FLOTILLA_HEARTBEAT_TIMEOUT_MS\) 9999 ms must be at least twice --heartbeat-interval \(FLOTILLA_HEARTBEAT_INTERVAL_MS\) 5000 ms/));
  it('no token anywhere', () => fails(['jobs'], new RegExp(`no API token: pass --token, set FLOTILLA_TOKEN.*${data}/admin-token`), 1));
  it('runner with more browser slots than capacity: exit 2, naming both', () => fails(['runner', '--server', 'http://127.0.0.1:1', '--token', 't', '--work-dir', data, '--capacity', '2', '--browser-slots', '3'], /--browser-slots \(FLOTILLA_BROWSER_SLOTS\) is 3, more than --capacity \(FLOTILLA_CAPACITY\) 2/));
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

  it('costs --since a word: exit 2 like every other bad value (the server would refuse it)', () =>
    fails(['costs', '--since', 'yesterday'], /^flotilla: option '--since <when>' argument 'yesterday' is invalid\. --since must be like 30m, 12h, 7d, 2w \(1 to 6 digits\) or an ISO-8601 date or date-time, UTC unless it gives an offset \(e\.g\. 2026-11-01, 2026-11-01T09:00\+02:00\), not before 1970\n/));
  it('FLOTILLA_COSTS_SINCE with a bad value names the variable', async () => {
    process.env.FLOTILLA_COSTS_SINCE = 'last week';
    await fails(['costs'], /^flotilla: option '--since <when>' value 'last week' from env 'FLOTILLA_COSTS_SINCE' is invalid\. --since must be like/);
  });
  it('FLOTILLA_LOG_LEVEL with a bad value: exit 2 naming it', async () => {
    process.env.FLOTILLA_LOG_LEVEL = 'loud';
    await fails(['runner', '--token', 't', '--work-dir', data], /^flotilla: FLOTILLA_LOG_LEVEL must be one of debug, info, warn, error, silent; got "loud"\n$/);
  });

  for (const [name, args] of [
    ['FLOTILLA_JSON', ['jobs']],
    ['FLOTILLA_FORCE', ['jobs', 'start', '1']],
    ['FLOTILLA_TREE', ['jobs', 'show', '1']],
    ['FLOTILLA_HOLD_EXTEND', ['hold', 'r', '--for', '1h', '--reason', 'x']],
    ['FLOTILLA_AGENTS_REPLACE', ['agents', 'install', 'x']],
    ['FLOTILLA_NO_RUNNER', ['up']],
    ['FLOTILLA_DETACH', ['run', 'test-fixer']],
    ['FLOTILLA_LOCAL', ['run', 'test-fixer']],
  ] as const) {
    it(`${name}=maybe: exit 2 naming the variable (booleans are 1/0/true/false/yes/no)`, async () => {
      process.env[name] = 'maybe';
      const err = await fails([...args], new RegExp(`^flotilla: ${name} must be 1, 0, true, false, yes or no; got "maybe"\n$`));
      expect(err).not.toContain('token');
    });
  }

  it('mcp: no URL says --server / FLOTILLA_SERVER; --server wins over FLOTILLA_URL, FLOTILLA_SERVER over FLOTILLA_URL; FLOTILLA_URL alone still works', async () => {
    process.env.FLOTILLA_JOB_TOKEN = 'flj_x';
    await fails(['mcp'], /^flotilla: flotilla mcp: no control plane URL: pass --server or set FLOTILLA_SERVER \(or FLOTILLA_URL, as the runner does\)\n$/);
    process.env.FLOTILLA_URL = 'http://127.0.0.1:1';
    await fails(['mcp', '--server', 'localhost:8787'], /^flotilla: flotilla mcp: --server: url "localhost:8787" must start with http/);
    await fails(['mcp', '--url', 'localhost:1'], /^flotilla: flotilla mcp: --url: url "localhost:1" must start with http/);
    process.env.FLOTILLA_SERVER = 'ftp://x';
    await fails(['mcp'], /^flotilla: flotilla mcp: FLOTILLA_SERVER: url "ftp:\/\/x" must start with http/);
    delete process.env.FLOTILLA_SERVER;
    delete process.env.FLOTILLA_JOB_TOKEN;
    // The runner's FLOTILLA_URL is taken: the next thing missing is the job token.
    await fails(['mcp'], /^flotilla: flotilla mcp: no job token: set FLOTILLA_JOB_TOKEN or --job-token\n$/);
  });

  it('runner --name that is not a runner name, FLOTILLA_ROLE that is not a role, role= label likewise: exit 2', async () => {
    const base = ['runner', '--token', 't', '--work-dir', data];
    await fails([...base, '--name', 'bad name/../x'], /^flotilla: option '--name <name>' argument 'bad name\/\.\.\/x' is invalid\. a runner name must be 1-63 characters of A-Z, a-z, 0-9, "\.", "_", "-", starting with a letter or digit\n/);
    await fails(['run', 'test-fixer', '--role', 'a/b'], /^flotilla: option '--role <role>' argument 'a\/b' is invalid\. a role must be 1-63 characters/);
    await fails([...base, '--labels', 'role=bad role'], /^flotilla: option '--labels <k=v,...>' argument 'role=bad role' is invalid\. role=bad role: a role must be 1-63 characters of A-Z, a-z, 0-9, "\.", "_", "-", starting with a letter or digit\n/);
    await fails(['runners', 'token', 'create', '--labels', 'os=linux,role=a b'], /^flotilla: option '--labels <k=v,...>' argument 'os=linux,role=a b' is invalid\. role=a b: a role must be/);
    process.env.FLOTILLA_ROLE = 'bad role';
    await fails(base, /^flotilla: option '--role <role>' value 'bad role' from env 'FLOTILLA_ROLE' is invalid\. a role must be 1-63 characters/);
  });

  it('runner --server that is not an http(s) URL: exit 2', async () => {
    await fails(['runner', '--server', 'build-1:8787', '--token', 't', '--work-dir', data], /^flotilla: --server \(FLOTILLA_SERVER\) must be an http:\/\/ or https:\/\/ URL, e\.g\. http:\/\/build-1:8787\n$/);
  });

  it('--data / --work-dir naming a file: "is not a folder", exit 2', async () => {
    const file = join(data, 'a-file');
    await writeFile(file, 'x');
    await fails(['up', '--data', file], new RegExp(`^flotilla: --data ${file} is not a folder\n$`));
    await fails(['run', 'test-fixer', '--local', '--data', join(file, 'below')], new RegExp(`^flotilla: --data ${file}/below: ${file} is not a folder\n$`));
    await fails(['runner', '--token', 't', '--work-dir', file], new RegExp(`^flotilla: --work-dir ${file} is not a folder\n$`));
  });

  it('models price with a model name the API refuses (spaces, *, a trailing -): exit 2 before any request, naming the rule', async () => {
    await fails(['models', 'price', 'bad name', '--input', '1', '--output', '1'], /^flotilla: command-argument value 'bad name' is invalid for argument 'model'\. model must be 1-200 characters of letters, digits/);
    await fails(['models', 'price', 'gpt-*', '--input', '1', '--output', '1'], /^flotilla: command-argument value 'gpt-\*' is invalid for argument 'model'\. model must be 1-200 characters/);
    await fails(['models', 'price', 'gz-', '--input', '1', '--output', '1'], /^flotilla: command-argument value 'gz-' is invalid for argument 'model'\. model must not end with "-"/);
  });

  it('run --agents without --local: exit 2 (it was ignored without a word)', () => fails(['run', 'test-fixer', '{}', '--agents', '/tmp', '--server', 'http://127.0.0.1:9', '--token', 't'], /^flotilla: --agents works with --local only: a server reads its agent folders when it starts \(flotilla up --agents DIR\)\n$/));

  it('tasks create --key "": --key is empty, exit 2', () => fails(['tasks', 'create', 'issue-worker', '--key', ''], /^flotilla: --key is empty: give a value, or leave --key out\n$/));

  it('tasks create --key "," or "k8,": an empty key among them, exit 2 (they were dropped: a task with no key was made)', async () => {
    await fails(['tasks', 'create', 'issue-worker', '--key', ','], /^flotilla: --key \(FLOTILLA_TASK_KEYS\) has an empty key in ",": give each key, comma-separated or one per --key\n$/);
    await fails(['tasks', 'create', 'issue-worker', '--key', 'a', '--key', 'k8,'], /^flotilla: --key \(FLOTILLA_TASK_KEYS\) has an empty key in "a,k8,"/);
  });

  it('any option that takes a value, given blank from its flag or its FLOTILLA_* variable, exits 2 naming both (never read as unset)', async () => {
    await fails(['jobs', '--status', ' '], /^flotilla: option '--status <status>' argument ' ' is invalid/);
    await fails(['hold', 'r1', '--for', '1h', '--reason', ' '], /^flotilla: --reason is empty: give a value, or leave --reason out\n$/);
    await fails(['tasks', 'create', 'issue-worker', '--title', ''], /^flotilla: --title is empty: give a value, or leave --title out\n$/);
    process.env.FLOTILLA_TASK_KEYS = '';
    try {
      await fails(['tasks', 'create', 'issue-worker'], /^flotilla: --key is empty \(FLOTILLA_TASK_KEYS is set to ""\): give a value, or unset FLOTILLA_TASK_KEYS\n$/);
    } finally {
      delete process.env.FLOTILLA_TASK_KEYS;
    }
  });

  it('unreachable server: exit 1 with a hint, token not shown', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const err = await fails(['agents', '--server', `http://127.0.0.1:${port}`, '--token', 'fla_supersecretvalue123'], /cannot reach the Flotilla server.*flotilla up/, 1);
    expect(err).not.toContain('supersecret');
  });
});

describe('boolean environment variables', () => {
  it('parseBoolEnv: 1/0/true/false/yes/no in any case; empty is unset; anything else names the variable', () => {
    expect(['1', 'TRUE', ' yes ', 'Yes'].map((v) => parseBoolEnv('X', v))).toEqual([true, true, true, true]);
    expect(['0', 'false', 'NO'].map((v) => parseBoolEnv('X', v))).toEqual([false, false, false]);
    expect(parseBoolEnv('X', '')).toBeUndefined();
    expect(() => parseBoolEnv('FLOTILLA_JSON', 'maybe')).toThrow('FLOTILLA_JSON must be 1, 0, true, false, yes or no; got "maybe"');
    expect(() => parseBoolEnv('FLOTILLA_JSON', 'off')).toThrow('got "off"');
  });

  it('applyBooleanEnv: a false value turns a flag off and a --no- flag back on', () => {
    const parse = (env: Record<string, string>) => {
      const cmd = new Command('x').exitOverride().addOption(new Option('--force').env('T_FORCE')).addOption(new Option('--no-runner').env('T_NO_RUNNER'));
      Object.assign(process.env, env);
      cmd.parse([], { from: 'user' });
      applyBooleanEnv(cmd);
      return cmd.opts();
    };
    expect(parse({ T_FORCE: 'false', T_NO_RUNNER: 'no' })).toEqual({ runner: true });
    expect(parse({ T_FORCE: 'Yes', T_NO_RUNNER: '1' })).toEqual({ force: true, runner: false });
    expect(parse({ T_FORCE: '', T_NO_RUNNER: '' })).toEqual({ runner: true });
    delete process.env.T_FORCE;
    delete process.env.T_NO_RUNNER;
  });
});

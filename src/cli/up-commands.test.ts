import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from './main.js';
import { recordingIO, waitFor, type RecordingIO, runCli } from './test-io.js';
import { startLocalUp, type LocalUp } from './test-up.js';

// `flotilla up --no-runner` on a real SQLite store and a real HTTP server, driven through
// main() like a user would, with the other commands talking to it through the client.

const cli = (...args: string[]) => ['node', 'flotilla', ...args];
let up: LocalUp;
let data: string;
let upIO: RecordingIO;
let url: string;

const run = (...args: string[]) => runCli([...args, '--server', url]);

beforeAll(async () => {
  up = await startLocalUp('flotilla-up-');
  ({ data, url, io: upIO } = up);
});

afterAll(async () => {
  expect(await up.stop()).toBe(0);
});

describe('flotilla up, then the client commands', () => {
  it('up prints the URL, the model, where the admin token is, and a runner line', async () => {
    const out = upIO.out();
    expect(out).toContain('flotilla: offline scripted model (no ANTHROPIC_API_KEY set)');
    expect(out).toContain(`flotilla: admin token in ${join(data, 'admin-token')}`);
    // Not a terminal (a pipe, journald): no live registration token in the output, only how to make one.
    expect(out).toContain(`flotilla runner --server ${url} --token <token>`);
    // ...with a command that works as printed: this server's URL and its data folder (not the default here).
    expect(out).toContain(`\`flotilla runners token create --server ${url} --data ${data}\``);
    expect(out).not.toMatch(/flr_/);
    expect((await readFile(join(data, 'admin-token'), 'utf8')).trim()).toMatch(/^fla_/);
  });

  it('agents: table and JSON, token read from <data>/admin-token', async () => {
    const t = await run('agents');
    expect(t.code).toBe(0);
    expect(t.out).toMatch(/^name\s+version\s+harness\s+model\s+source\s+description$/m);
    expect(t.out).toMatch(/^test-fixer\s+1\s+claude-code\s+claude-sonnet-4-5\s+folder\s+Runs a repository/m);
    const j = await run('agents', '--json');
    expect((JSON.parse(j.out) as { agents: Array<{ name: string }> }).agents.map((a) => a.name)).toContain('test-fixer');
  });

  it('FLOTILLA_JSON=1 turns on JSON, FLOTILLA_JSON=0 does not', async () => {
    process.env.FLOTILLA_JSON = '1';
    expect(JSON.parse((await run("runners")).out)).toEqual({ runners: [], queued: 0 });
    process.env.FLOTILLA_JSON = '0';
    expect((await run('runners')).out).toMatch(/^no runners/);
    delete process.env.FLOTILLA_JSON;
  });

  it('runners token create prints a single-use token and the runner command', async () => {
    const r = await run('runners', 'token', 'create', '--labels', 'os=linux');
    expect(r.code).toBe(0);
    expect(r.out.trim()).toMatch(/^flr_[A-Za-z0-9_-]+$/);
    expect(r.err).toContain(`flotilla runner --server ${url} --token ${r.out.trim()} --labels os=linux`);
  });

  it('a wrong token: exit 1, 401 explained', async () => {
    const r = await run('jobs', '--token', 'fla_wrongwrongwrongwrong');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/flotilla: .*check --token \/ FLOTILLA_TOKEN/);
    expect(r.err).not.toContain('wrongwrongwrong');
  });

  it('run with bad input: exit 1, the server names the field; unknown agent named', async () => {
    const bad = await run('run', 'test-fixer', '{}');
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/repo/);
    const unknown = await run('run', 'no-such-agent', '{}');
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/no-such-agent/);
  });

  it('run --detach, jobs, jobs show, jobs cancel (twice)', async () => {
    const d = await run('run', 'test-fixer', '{"repo":"examples/calc"}', '--detach', '--json', '--budget', '0.5', '--priority', '3');
    expect(d.code).toBe(0);
    const job = (JSON.parse(d.out) as { job: { id: number; status: string; budgetMicros: number; priority: number } }).job;
    expect(job).toMatchObject({ status: 'queued', budgetMicros: 500_000, priority: 3 });

    const list = await run('jobs');
    expect(list.code).toBe(0);
    expect(list.out).toMatch(new RegExp(`^${job.id}\\s+test-fixer\\s+queued\\b`, 'm'));

    const show = await run('jobs', 'show', String(job.id));
    expect(show.out).toMatch(/^status: {4}queued$/m);
    expect(show.out).toMatch(/^budget: {4}\$0\.500000$/m);
    expect(show.out).toContain('{"repo":"examples/calc"}');

    const c1 = await run('jobs', 'cancel', String(job.id));
    expect(c1.code).toBe(0);
    expect(c1.out.trim()).toBe(`job ${job.id} cancelled`);
    const c2 = await run('jobs', 'cancel', String(job.id));
    expect(c2.code).toBe(1);
    expect(c2.err).toMatch(/flotilla: /);

    const cancelled = await run('jobs', '--status', 'cancelled', '--json');
    expect((JSON.parse(cancelled.out) as { jobs: Array<{ id: number }> }).jobs.map((j) => j.id)).toContain(job.id);
  });

  it('attached run with no runner: says it waits, Ctrl-C cancels the job and exits 130', async () => {
    const io = recordingIO();
    const done = main(cli('run', 'test-fixer', '{"repo":"examples/calc"}', '--server', url), io);
    await waitFor(() => io.out().includes('test-fixer … waiting for a runner'), 'the waiting line');
    // Not a TTY: a "still waiting" line on stderr after 5 s of silence.
    await waitFor(() => /^test-fixer … still (waiting for a runner|no runner .*) \([5-7]s\)$/m.test(io.err()), 'a still line', 9000);
    io.signals.emit('SIGINT');
    expect(await done).toBe(130);
    const m = /cancelling job (\d+)/.exec(io.err());
    expect(m).not.toBeNull();
    expect(io.err()).toContain(`flotilla: job ${m![1]} cancelled`);
    const show = await run('jobs', 'show', m![1]!, '--json');
    expect((JSON.parse(show.out) as { job: { status: string } }).job.status).toBe('cancelled');
  });

  it('attached --json run of a job cancelled elsewhere: JSON lines, then {"job"}, exit 1', async () => {
    const d = await run('run', 'test-fixer', '{"repo":"examples/calc"}', '--detach', '--json');
    const id = (JSON.parse(d.out) as { job: { id: number } }).job.id;
    const io = recordingIO();
    const done = main(cli('run', 'test-fixer', '{"repo":"examples/calc"}', '--server', url, '--json'), io);
    await waitFor(() => io.out().includes('"type":"status"'), 'the first JSON event');
    const lines = io.out().trim().split('\n');
    const own = (JSON.parse(lines[0]!) as { jobId: number }).jobId;
    expect(own).not.toBe(id);
    expect((await run('jobs', 'cancel', String(own))).code).toBe(0);
    expect(await done).toBe(1);
    const all = io
      .out()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const last = all.at(-1) as { job: { id: number; status: string } };
    expect(last.job).toMatchObject({ id: own, status: 'cancelled' });
    expect(all.slice(0, -1).every((e) => e.jobId === own && typeof e.seq === 'number')).toBe(true);
    await run('jobs', 'cancel', String(id));
  });
});

describe('flotilla up on a terminal', () => {
  it('prints a live registration token (single use) that a runner can register with', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-up-tty-'));
    const io = recordingIO(true);
    const done = main(cli('up', '--port', '0', '--no-runner', '--data', dir), io);
    try {
      await waitFor(() => /press Ctrl-C/.test(io.out()) || io.err() !== '', 'flotilla up to start');
      const m = /flotilla runner --server (http:\/\/127\.0\.0\.1:\d+) --token (flr_[A-Za-z0-9_-]{20,})$/m.exec(io.out());
      expect(m, io.out()).not.toBeNull();
      const reg = await fetch(`${m![1]}/api/runners/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: m![2], name: 'tty-runner', capacity: 1 }) });
      expect(reg.status).toBe(201);
    } finally {
      io.signals.emit('SIGINT');
      expect(await done).toBe(0);
      await rm(dir, { recursive: true, force: true });
    }
  });
});

import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startRunner, type RunnerOptions, type RunningRunner } from './runner.js';
import { groupAlive, spawnGroup } from './process.js';
import { recordGroup } from './orphans.js';
import { assignment, FakeControlPlane } from './testdata/fake-control-plane.js';

const FAKE_CLAUDE = fileURLToPath(new URL('./testdata/fake-claude.mjs', import.meta.url));
chmodSync(FAKE_CLAUDE, 0o755);

let tmp: string;
let cp: FakeControlPlane;
let runners: RunningRunner[];

beforeEach(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'flotilla-runner-'));
  // A plain (non-git) project, like examples/calc inside the Flotilla checkout.
  mkdirSync(join(tmp, 'repos', 'proj', 'node_modules', 'dep'), { recursive: true });
  writeFileSync(join(tmp, 'repos', 'proj', 'calc.js'), 'export const add = (a, b) => a + b;\n');
  writeFileSync(join(tmp, 'repos', 'proj', 'node_modules', 'dep', 'index.js'), '//\n');
  cp = await new FakeControlPlane({ heartbeatIntervalMs: 100 }).listen();
  runners = [];
});

afterEach(async () => {
  await Promise.all(runners.map((r) => r.stop()));
  await cp.close();
  rmSync(tmp, { recursive: true, force: true });
});

async function start(over: Partial<RunnerOptions> = {}): Promise<RunningRunner> {
  const r = await startRunner({
    serverUrl: cp.url,
    registrationToken: 'flr_testregistrationtoken',
    workDir: join(tmp, 'work'),
    name: 'test-runner',
    labels: { os: 'linux' },
    repoBaseDir: join(tmp, 'repos'),
    claudePath: FAKE_CLAUDE,
    graceMs: 2000,
    reconnect: { minMs: 20, maxMs: 100 },
    connectTimeoutMs: 3000,
    ...over,
  });
  runners.push(r);
  return r;
}

const home = (jobId: number) => join(tmp, 'work', 'homes', `job-${jobId}`);
const types = (jobId: number) => cp.events(jobId).map((e) => e.type);

describe('registration and connection', () => {
  it('registers once, stores the credential 0600, says hello, gets welcome, heartbeats', async () => {
    const r = await start();
    expect(r.runnerId).toBe(7);
    const credFile = join(tmp, 'work', 'secret', 'credential.json');
    expect(statSync(join(tmp, 'work', 'secret')).mode & 0o777).toBe(0o700);
    expect(statSync(credFile).mode & 0o777).toBe(0o600);
    const cred = JSON.parse(readFileSync(credFile, 'utf8')) as { credential: string; runnerId: number };
    expect(cp.credentials.get(cred.credential)).toBe(7);
    // Just registered as test-runner: the hello asks for no name (the runner keeps the one it has).
    expect(cp.hellos[0]).toMatchObject({ type: 'hello', labels: { os: 'linux' }, capacity: 1, running: [] });
    expect(cp.hellos[0]).not.toHaveProperty('name');
    expect(cp.hellos[0]?.version).toMatch(/^\d+\.\d+\.\d+/);
    await cp.waitFor(() => cp.frames.filter((f) => f.type === 'heartbeat').length >= 2, 3000, 'two heartbeats');
    await r.stop();

    // Same work folder and server: the credential is reused, the (now used) token is not needed.
    const again = await start({ registrationToken: undefined });
    expect(again.runnerId).toBe(7);
    expect(cp.registerCalls).toBe(1);
    expect(cp.hellos).toHaveLength(2);
    // Started again with its --name (start() gives one): the hello asks for it.
    expect(cp.hellos[1]).toMatchObject({ type: 'hello', name: 'test-runner' });
    // Each runner process says who it is (hello.instance), another one for the next process.
    expect(cp.hellos[0]?.instance).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(cp.hellos[1]?.instance).not.toBe(cp.hellos[0]?.instance);
  });

  it('says hello as the instance it is given (a process started again after a self-update); refuses one that is not printable', async () => {
    await start({ instance: 'runner-proc-1' });
    expect(cp.hellos[0]?.instance).toBe('runner-proc-1');
    await expect(startRunner({ serverUrl: cp.url, workDir: join(tmp, 'work-2'), registrationToken: 'flr_testregistrationtoken', instance: 'has space' })).rejects.toThrow(
      'instance must be 1-64 visible ASCII characters, got "has space"',
    );
  });

  it('fails clearly without credential or registration token', async () => {
    await expect(start({ registrationToken: undefined })).rejects.toThrow(/no runner credential for http:\/\/127\.0\.0\.1:\d+ .*registration token/);
  });

  it('fails with the server message when the registration token is refused', async () => {
    await expect(start({ registrationToken: 'flr_wrongtokenxxxx' })).rejects.toThrow(/HTTP 401\): registration token unknown/);
  });

  it('fails at once when the server refuses the stored credential (401)', async () => {
    await start();
    await runners.pop()?.stop();
    cp.credentials.clear();
    const t0 = Date.now();
    await expect(start({ registrationToken: undefined, connectTimeoutMs: 10_000 })).rejects.toThrow(/refused the runner credential \(HTTP 401\): unknown runner credential; register again/);
    expect(Date.now() - t0).toBeLessThan(3000);
    // With a registration token at hand (flotilla up on a fresh database), it registers again.
    cp.registrationTokens.add('flr_secondtokenxxxxxx');
    const r = await start({ registrationToken: 'flr_secondtokenxxxxxx' });
    expect(r.runnerId).toBe(7);
    expect(cp.registerCalls).toBe(2);
    const cred = JSON.parse(readFileSync(join(tmp, 'work', 'secret', 'credential.json'), 'utf8')) as { credential: string };
    expect(cp.credentials.has(cred.credential)).toBe(true);
  });

  it('a revoked runner does not register itself again, even with a registration token at hand (flotilla up)', async () => {
    await start();
    await runners.pop()?.stop();
    const cred = JSON.parse(readFileSync(join(tmp, 'work', 'secret', 'credential.json'), 'utf8')) as { credential: string; runnerId: number };
    cp.revoked.add(cred.credential);
    cp.registrationTokens.add('flr_anothertokenxxxxx');
    const err = (await start({ registrationToken: 'flr_anothertokenxxxxx' }).catch((e: unknown) => e)) as Error;
    expect(err.message).toBe(
      `runner ${cred.runnerId} was revoked on ${cp.url}: it cannot connect again; to register this machine as a new runner, delete ${join(tmp, 'work', 'secret', 'credential.json')} and start it with a new registration token (flotilla runners token create)`,
    );
    expect(cp.registerCalls).toBe(1);
    // Without a registration token: the server's reason, said once.
    await expect(start({ registrationToken: undefined })).rejects.toThrow(/refused the runner credential \(HTTP 401\): runner revoked: register it again with a new registration token$/);
  });

  it('fails after the bounded time when nothing listens', async () => {
    await start();
    await runners.pop()?.stop();
    const url = cp.url;
    await cp.close();
    const t0 = Date.now();
    await expect(start({ serverUrl: url, registrationToken: undefined, connectTimeoutMs: 600 })).rejects.toThrow(/could not connect to .* within 600 ms: .*ECONNREFUSED/);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(590);
    cp = await new FakeControlPlane().listen(); // for afterEach
  });

  it('ignores a bad frame and keeps the connection', async () => {
    await start();
    cp.send('not json');
    cp.send(JSON.stringify({ type: 'job.assign', assignment: { jobId: 'x' } }));
    cp.send({ type: 'job.assign', assignment: assignment(1, 'SCENARIO=basic', { repo: 'proj' }) });
    await cp.waitFor(() => cp.finished(1) !== undefined, 20_000, 'job 1 to finish');
    expect(cp.hellos).toHaveLength(1);
    expect(cp.finished(1)?.data.status).toBe('succeeded');
  });
});

describe('jobs', () => {
  it('runs an assignment: events in order with rseq 1..n, result, env and args of the harness', async () => {
    process.env.FLOTILLA_TEST_SECRET = 'sk-should-not-leak-123456';
    process.env.ANTHROPIC_API_KEY = 'sk-ant-runner-key-should-not-leak';
    try {
      await start();
      cp.send({ type: 'job.assign', assignment: assignment(1, 'Fix {{input.repo}} on {{job.branch}}. SCENARIO=basic', { repo: 'proj' }) });
      await cp.waitFor(() => cp.finished(1) !== undefined, 20_000, 'job 1 to finish');
    } finally {
      delete process.env.FLOTILLA_TEST_SECRET;
      delete process.env.ANTHROPIC_API_KEY;
    }
    expect(cp.frames.find((f) => f.type === 'job.accepted')).toEqual({ type: 'job.accepted', jobId: 1, attempt: 1 });
    expect(cp.gaps).toEqual([]);
    const events = cp.events(1);
    expect(events.map((e) => e.rseq)).toEqual(events.map((_, i) => i + 1));
    // stderr is a separate pipe: its position relative to stdout is not fixed.
    const stdoutOnly = events.filter((e) => !(e.type === 'log' && e.data.stream === 'stderr'));
    expect(stdoutOnly.map((e) => e.type)).toEqual([
      'progress', 'progress', 'progress', 'harness.started', 'message', 'usage', 'tool.call', 'tool.result', 'log', 'message', 'usage', 'job.finished',
    ]);
    expect(events.filter((e) => e.type === 'progress').map((e) => e.data.message)).toEqual([
      'preparing workspace: snapshotting proj into a fresh git repository',
      'preparing workspace: cloning proj',
      'starting claude-code',
    ]);
    const ws = join(tmp, 'work', 'workspaces', 'job-1');
    const inv = JSON.parse(readFileSync(join(home(1), 'fake-invocation.json'), 'utf8')) as { argv: string[]; env: Record<string, string>; pid: number; cwd: string };
    expect(events.find((e) => e.type === 'harness.started')?.data).toEqual({ harness: 'claude-code', pid: inv.pid, sessionId: 'sess-fake-1', workspace: ws, branch: 'flotilla/job-1' });
    expect(events.find((e) => e.type === 'tool.call')?.data).toEqual({ id: 'toolu_1', name: 'Bash', input: { command: 'npm test' } });
    expect(events.find((e) => e.type === 'tool.result')?.data).toEqual({ id: 'toolu_1', name: 'Bash', output: '# pass 3\n# fail 1', isError: true });
    const logs = events.flatMap((e) => (e.type === 'log' ? [e.data] : []));
    expect(logs).toEqual(expect.arrayContaining([{ stream: 'stdout', line: 'this line is not json' }, { stream: 'stderr', line: 'a warning on stderr' }]));
    expect(logs).toHaveLength(2);

    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ws, encoding: 'utf8' }).trim();
    expect(execFileSync('git', ['log', '--format=%s', '-2'], { cwd: ws, encoding: 'utf8' })).toBe('fix calc\nsnapshot of proj\n');
    expect(cp.finished(1)?.data).toEqual({
      status: 'succeeded',
      sessionId: 'sess-fake-1',
      result: { summary: 'Fixed the off-by-one. All tests pass.', branch: 'flotilla/job-1', commit: head, changedFiles: ['calc.js', 'notes.txt'] },
    });

    // The harness ran in the workspace with its own HOME and only the variables it should see.
    expect(inv.cwd).toBe(ws);
    expect(inv.argv).toEqual([
      '-p', '--output-format', 'stream-json', '--verbose', '--model', 'claude-sonnet-4-5', '--max-turns', '7',
      '--dangerously-skip-permissions', '--tools', 'Bash,Read', '--strict-mcp-config', '--', 'Fix proj on flotilla/job-1. SCENARIO=basic',
    ]);
    expect(inv.env.HOME).toBe(home(1));
    expect(inv.env.ANTHROPIC_BASE_URL).toBe(cp.url);
    expect(inv.env.FLOTILLA_URL).toBe(cp.url);
    expect(inv.env.ANTHROPIC_API_KEY).toBe('flj_jobtoken1secretvalue');
    expect(inv.env.FLOTILLA_JOB_TOKEN).toBe('flj_jobtoken1secretvalue');
    expect(inv.env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe('1');
    expect(inv.env.IS_SANDBOX).toBe(process.getuid?.() === 0 ? '1' : undefined);
    expect(inv.env.FLOTILLA_TEST_SECRET).toBeUndefined();
    expect(JSON.stringify(inv.env)).not.toContain('flc_');
    expect(existsSync(join(ws, 'node_modules'))).toBe(false);
  });

  it('keeps events until acked, reports the attempt as running until then, and forgets it after', async () => {
    cp.ack = 'none';
    await start();
    cp.send({ type: 'job.assign', assignment: assignment(2, 'SCENARIO=many:5', { repo: 'proj' }) });
    await cp.waitFor(() => cp.finished(2) !== undefined, 20_000, 'job 2 finished');
    const n = cp.events(2).length;
    expect(n).toBe(3 + 1 + 5 * 2 + 1); // progress×3, harness.started, (message+usage)×5, job.finished
    const hb = () => cp.frames.filter((f) => f.type === 'heartbeat');
    const before = hb().length;
    await cp.waitFor(() => hb().length > before, 2000, 'a heartbeat');
    expect(hb().at(-1)).toEqual({ type: 'heartbeat', running: [{ jobId: 2, attempt: 1 }] });
    cp.send({ type: 'ack', jobId: 2, attempt: 1, upTo: n - 1 }); // all but job.finished
    const mid = hb().length;
    await cp.waitFor(() => hb().length > mid + 1, 2000, 'heartbeats');
    expect(hb().at(-1)?.running).toEqual([{ jobId: 2, attempt: 1 }]);
    cp.send({ type: 'ack', jobId: 2, attempt: 1, upTo: n });
    const after = hb().length;
    await cp.waitFor(() => hb().length > after + 1, 2000, 'heartbeats');
    expect(hb().at(-1)?.running).toEqual([]);
    expect(cp.received).toBe(n); // nothing was sent twice on a healthy connection
  });

  it('a cancel repeated after the attempt finished keeps its undelivered events; only a discarding cancel drops them', async () => {
    cp.ack = 'none';
    await start();
    cp.send({ type: 'job.assign', assignment: assignment(9, 'SCENARIO=many:2', { repo: 'proj' }) });
    await cp.waitFor(() => cp.finished(9) !== undefined, 20_000, 'job 9 finished');
    const hb = () => cp.frames.filter((f) => f.type === 'heartbeat');
    // The hub repeats the cancel of a `cancelling` job on every heartbeat that reports it.
    cp.send({ type: 'job.cancel', jobId: 9, attempt: 1, reason: 'cancelled by request' });
    const a = hb().length;
    await cp.waitFor(() => hb().length > a + 1, 2000, 'heartbeats');
    expect(hb().at(-1)?.running).toEqual([{ jobId: 9, attempt: 1 }]); // still delivering
    // A stale attempt: the server refuses its events, so the runner forgets them.
    cp.send({ type: 'job.cancel', jobId: 9, attempt: 1, reason: 'stale attempt: the job was reassigned', discard: true });
    const b = hb().length;
    await cp.waitFor(() => hb().length > b + 1, 2000, 'heartbeats');
    expect(hb().at(-1)?.running).toEqual([]);
  });

  it('loses nothing when the connection drops mid-job: every event exactly once, no gap', async () => {
    cp.ack = 'none';
    await start();
    cp.send({ type: 'job.assign', assignment: assignment(3, 'SCENARIO=many:150', { repo: 'proj' }, {}, { maxTurns: 200 }) });
    await cp.waitFor(() => cp.events(3).length >= 40, 20_000, '40 events');
    cp.dropConnection(); // nothing was acked: everything so far must be resent
    const storedAtDrop = cp.events(3).length;
    cp.ack = 'auto';
    await cp.waitFor(() => cp.hellos.length === 2, 5000, 'the reconnect hello');
    expect(cp.hellos[1]?.running).toEqual([{ jobId: 3, attempt: 1 }]);
    // The same process: the same instance id, so the server lets it replace its old socket.
    expect(cp.hellos[1]?.instance).toBe(cp.hellos[0]?.instance);
    await cp.waitFor(() => cp.events(3).length >= 200, 20_000, '200 events');
    cp.dropConnection(); // and once more, now with acks flowing
    await cp.waitFor(() => cp.finished(3) !== undefined, 20_000, 'job 3 finished');
    const events = cp.events(3);
    expect(events).toHaveLength(3 + 1 + 150 * 2 + 1);
    expect(events.map((e) => e.rseq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === 'message').map((e) => e.data.text)).toEqual(Array.from({ length: 150 }, (_, i) => `m${i + 1}`));
    expect(cp.gaps).toEqual([]);
    expect(cp.received).toBeGreaterThanOrEqual(events.length + storedAtDrop); // the unacked ones really were resent
    expect(cp.finished(3)?.data.status).toBe('succeeded');
  });

  it('cancel kills the whole process group (harness + grandchild) within the grace period', async () => {
    await start({ graceMs: 5000 });
    cp.send({ type: 'job.assign', assignment: assignment(4, 'SCENARIO=sleep', { repo: 'proj' }) });
    await cp.waitFor(() => types(4).includes('tool.call'), 20_000, 'the harness to run');
    const pids = JSON.parse(readFileSync(join(home(4), 'pids.json'), 'utf8')) as { leader: number; grandchild: number };
    expect(groupAlive(pids.leader)).toBe(true);
    const t0 = Date.now();
    cp.cancel(4, 1, 'cancelled by user');
    await cp.waitFor(() => cp.finished(4) !== undefined, 10_000, 'job 4 finished');
    expect(groupAlive(pids.leader)).toBe(false); // no live member left when job.finished is sent
    await waitGroupGone(pids.leader, t0 + 5000);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(cp.finished(4)?.data).toMatchObject({ status: 'cancelled', reason: 'cancelled', error: 'cancelled by user', result: { branch: 'flotilla/job-4', changedFiles: [] } });
  });

  it('SIGKILLs a harness that ignores SIGTERM after the grace period', async () => {
    await start({ graceMs: 400 });
    cp.send({ type: 'job.assign', assignment: assignment(5, 'SCENARIO=sleep:ignore-term', { repo: 'proj' }) });
    await cp.waitFor(() => types(5).includes('tool.call'), 20_000, 'the harness to run');
    const pids = JSON.parse(readFileSync(join(home(5), 'pids.json'), 'utf8')) as { leader: number; grandchild: number };
    const t0 = Date.now();
    cp.cancel(5, 1, 'stop');
    await cp.waitFor(() => cp.finished(5) !== undefined, 10_000, 'job 5 finished');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(390); // it did wait the grace period
    expect(groupAlive(pids.leader)).toBe(false);
    await waitGroupGone(pids.leader, t0 + 400 + 3000);
    expect(cp.finished(5)?.data.status).toBe('cancelled');
  });

  it('enforces the wall-clock timeout', async () => {
    await start({ graceMs: 500 });
    const t0 = Date.now();
    cp.send({ type: 'job.assign', assignment: assignment(6, 'SCENARIO=sleep', { repo: 'proj' }, {}, { timeoutSeconds: 3 }) });
    await cp.waitFor(() => types(6).includes('tool.call'), 20_000, 'the harness to run');
    const pids = JSON.parse(readFileSync(join(home(6), 'pids.json'), 'utf8')) as { leader: number };
    await cp.waitFor(() => cp.finished(6) !== undefined, 10_000, 'job 6 finished');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3000);
    expect(cp.finished(6)?.data).toMatchObject({ status: 'failed', reason: 'timeout', error: 'timed out after 3 s (agent limits.timeoutSeconds)' });
    expect(groupAlive(pids.leader)).toBe(false);
  });

  it('rejects assignments beyond capacity', async () => {
    await start({ capacity: 1, graceMs: 500 });
    cp.send({ type: 'job.assign', assignment: assignment(8, 'SCENARIO=sleep', { repo: 'proj' }) });
    cp.send({ type: 'job.assign', assignment: assignment(9, 'SCENARIO=sleep', { repo: 'proj' }) });
    await cp.waitFor(() => cp.frames.some((f) => f.type === 'job.rejected'), 5000, 'a rejection');
    expect(cp.frames.find((f) => f.type === 'job.rejected')).toEqual({ type: 'job.rejected', jobId: 9, attempt: 1, reason: 'at capacity (1 of 1 jobs running)' });
    expect(cp.events(9)).toEqual([]);
    cp.cancel(8, 1, 'done');
    await cp.waitFor(() => cp.finished(8) !== undefined, 10_000, 'job 8 finished');
  });

  it('fails with reason workspace naming the repo when it does not exist', async () => {
    await start();
    cp.send({ type: 'job.assign', assignment: assignment(10, 'SCENARIO=basic', { repo: 'no/such/repo' }) });
    await cp.waitFor(() => cp.finished(10) !== undefined, 10_000, 'job 10 finished');
    expect(cp.finished(10)?.data).toEqual({ status: 'failed', reason: 'workspace', error: `repo no/such/repo: no such directory (${join(tmp, 'repos', 'no/such/repo')})` });
    expect(types(10)).toEqual(['job.finished']);
  });

  it('maps max turns, a crash without result, and a missing executable to failures', async () => {
    await start({ capacity: 3 });
    cp.send({ type: 'job.assign', assignment: assignment(11, 'SCENARIO=max-turns', { repo: 'proj' }) });
    cp.send({ type: 'job.assign', assignment: assignment(12, 'SCENARIO=crash', { repo: 'proj' }) });
    await cp.waitFor(() => cp.finished(11) !== undefined && cp.finished(12) !== undefined, 20_000, 'jobs 11, 12 finished');
    expect(cp.finished(11)?.data).toMatchObject({ status: 'failed', reason: 'max_turns', error: 'claude-code hit its turn limit after 2 turns' });
    expect(cp.finished(12)?.data).toMatchObject({ status: 'failed', reason: 'error', error: 'claude-code exited with code 3 without a result: boom 1\nboom 2\nboom 3' });
    await runners.pop()?.stop();

    await start({ registrationToken: undefined, claudePath: join(tmp, 'no-such-claude') });
    cp.send({ type: 'job.assign', assignment: assignment(13, 'SCENARIO=basic', { repo: 'proj' }) });
    await cp.waitFor(() => cp.finished(13) !== undefined, 20_000, 'job 13 finished');
    expect(cp.finished(13)?.data).toMatchObject({ status: 'failed', reason: 'harness_start' });
    expect(cp.finished(13)?.data.error).toMatch(/cannot start claude-code: spawn .*no-such-claude ENOENT/);
  });

  it('kills stragglers left in the group after a normal exit', async () => {
    await start({ graceMs: 500 });
    cp.send({ type: 'job.assign', assignment: assignment(14, 'SCENARIO=straggler', { repo: 'proj' }) });
    await cp.waitFor(() => cp.finished(14) !== undefined, 20_000, 'job 14 finished');
    const pids = JSON.parse(readFileSync(join(home(14), 'pids.json'), 'utf8')) as { leader: number; grandchild: number };
    expect(cp.finished(14)?.data.status).toBe('succeeded');
    expect(groupAlive(pids.leader)).toBe(false);
  });

  it('kills job process groups a previous runner process left behind, at start', async () => {
    const left = spawnGroup('sh', ['-c', 'sleep 300 & wait'], { cwd: '/', env: { PATH: process.env.PATH ?? '/bin' } });
    await recordGroup(join(tmp, 'work'), 99, 1, left.pid);
    expect(groupAlive(left.pid)).toBe(true);
    await start();
    expect(groupAlive(left.pid)).toBe(false);
  });

  it('stop() kills running jobs and gives them up (no job.finished: the server retries them as a crashed runner\'s), delivering their events', async () => {
    const r = await start({ graceMs: 500 });
    cp.send({ type: 'job.assign', assignment: assignment(15, 'SCENARIO=sleep', { repo: 'proj' }) });
    await cp.waitFor(() => types(15).includes('tool.call'), 20_000, 'the harness to run');
    const pids = JSON.parse(readFileSync(join(home(15), 'pids.json'), 'utf8')) as { leader: number };
    await r.stop();
    expect(groupAlive(pids.leader)).toBe(false);
    expect(cp.finished(15)).toBeUndefined();
    expect(cp.events(15).at(-1)).toMatchObject({ type: 'progress', data: { phase: 'lost', message: 'runner gave the attempt up, its processes are gone: runner stopped' } });
  });
});

/** Polls kill(-pgid, 0) until ESRCH; fails after `deadline` (epoch ms). */
async function waitGroupGone(pgid: number, deadline: number): Promise<void> {
  for (;;) {
    try {
      process.kill(-pgid, 0);
    } catch (err) {
      expect((err as NodeJS.ErrnoException).code).toBe('ESRCH');
      return;
    }
    if (Date.now() > deadline) throw new Error(`process group ${pgid} still exists`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

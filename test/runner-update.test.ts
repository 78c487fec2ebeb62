/**
 * Runner self-update end to end (issue 5, status `updating`): a real `flotilla runner` process
 * with `--update-command` set to a small script, told through the real `flotilla runners update`
 * binary. Success: it reads `updating`, takes no new job while its running one finishes, runs
 * the script (which sees the version), re-executes itself (a second connection, new pid) and is
 * `online` again, running the job that waited. Failure (exit 3): a runner event names exit code
 * 3 and the script's last stderr line with the secret masked; it is `online` again, not
 * restarted, and takes jobs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../src/server/test-helpers.js';
import type { Job, RunnerActivity, RunnerList } from '../src/protocol/index.js';
import { BIN, ROOT, spawnFlotilla, tempDir, waitFor } from './helpers.js';

const dir = tempDir('flotilla-update-');
let t: TestServer;
const children: Array<ReturnType<typeof spawnFlotilla>> = [];

/** Runs the real `flotilla` binary against the test server; resolves with its exit code and output. */
function cli(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const env = { ...process.env, FLOTILLA_SERVER: t.url, FLOTILLA_TOKEN: t.admin };
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

/** The parent pid of `pid` (/proc/<pid>/stat field 4). */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** True while `pid` exists and is not a zombie. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

async function runner(name: string): Promise<RunnerList['runners'][number] | undefined> {
  const list = (await (await t.api('/api/runners')).json()) as RunnerList;
  return list.runners.find((r) => r.name === name);
}

async function activity(id: number): Promise<RunnerActivity['entries']> {
  return ((await (await t.api(`/api/runners/${id}/activity?limit=200`)).json()) as RunnerActivity).entries;
}

/** The file whose existence ends the `nap` agent's job. */
function napRelease(): string {
  return join(dir.path, 'nap-release');
}

async function job(id: number): Promise<Job> {
  return (await (await t.api(`/api/jobs/${id}`)).json()) as Job;
}

/** A real runner process, capacity 2 (a job queued while it updates would fit beside the running one). */
async function startRunner(name: string, pool: string, updateCommand: string) {
  const child = spawnFlotilla(
    ['runner', '--server', t.url, '--token', await t.regToken(), '--work-dir', join(dir.path, name), '--name', name, '--labels', `pool=${pool}`, '--capacity', '2', '--update-command', updateCommand],
    { FLOTILLA_REPO_BASE: ROOT },
  );
  children.push(child);
  return child;
}

/** Stops a runner process (SIGTERM; its supervisor passes it on) and waits for it to exit. */
async function stop(child: ReturnType<typeof spawnFlotilla>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const t0 = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(t0);
}

beforeAll(async () => {
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  const agents = join(dir.path, 'agents');
  // Each job notes the pid of the runner process that started it (its parent: setpriv execs).
  const pids = join(dir.path, 'job-parents.txt');
  // nap runs until the test releases it (at most 60 s): a fixed `sleep 6` ended, on a loaded CI
  // machine, while the test's three CLI calls still ran, and the update ran before it was checked not to have
  const nap = `echo nap $PPID >> ${pids}; i=0; while [ ! -e ${napRelease()} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done`;
  for (const [name, cmd] of [['nap', nap], ['quick', `echo quick $PPID >> ${pids}`]] as const) {
    mkdirSync(join(agents, name), { recursive: true });
    writeFileSync(join(agents, name, 'agent.yaml'), `name: ${name}\nversion: "1"\nharness: command\ncommand: [sh, -c, ${JSON.stringify(cmd)}]\nlimits: { defaultBudgetUsd: 0.5 }\n`);
    writeFileSync(join(agents, name, 'prompt.md'), 'nap');
  }
  t = await startTestServer({ agentsDirs: [agents], heartbeatIntervalMs: 500, heartbeatTimeoutMs: 10_000, dispatchIntervalMs: 100 });
}, 60_000);

afterAll(async () => {
  for (const c of children) await stop(c);
  await t?.close();
  dir.cleanup();
});

describe('runners update (real runner process)', () => {
  it('drains, runs the update command with the version, re-executes, and is online again; a job queued meanwhile waits', async () => {
    const marker = join(dir.path, 'updated.txt');
    const script = join(dir.path, 'update-ok.sh');
    writeFileSync(script, `#!/bin/sh\necho "installed $FLOTILLA_UPDATE_VERSION pid $PPID" >> '${marker}'\nexit 0\n`);
    chmodSync(script, 0o755);
    const proc = await startRunner('upd-ok', 'ok', script);
    const r0 = await waitFor('runner upd-ok online', async () => ((await runner('upd-ok'))?.status === 'online' ? runner('upd-ok') : null), 30_000);
    const id = r0!.id;

    // A running job: the update waits for it.
    const nap = (await (await t.api('/api/jobs', { json: { agent: 'nap', input: {}, labels: { pool: 'ok' } } })).json()) as Job;
    await waitFor('nap running', async () => (await job(nap.id)).status === 'running', 30_000);

    const upd = await cli('runners', 'update', 'upd-ok', '--to', '9.9.9');
    expect(upd.err).toBe('');
    expect(upd.code).toBe(0);
    expect(upd.out).toContain(`runner upd-ok (${id}) updating to 9.9.9`);
    expect((await runner('upd-ok'))?.status).toBe('updating');
    const filtered = (await (await t.api('/api/runners?status=updating')).json()) as RunnerList;
    expect(filtered.runners.map((r) => r.name)).toEqual(['upd-ok']);
    const listed = await cli('runners');
    expect(listed.out).toMatch(new RegExp(`^${id}\\s+upd-ok\\s+updating\\s`, 'm'));
    expect(existsSync(marker)).toBe(false); // the running job is not finished yet: the command has not run

    // Queued while updating: it waits (the runner is out of dispatch, though it has a free slot).
    const queued = (await (await t.api('/api/jobs', { json: { agent: 'quick', input: {}, labels: { pool: 'ok' } } })).json()) as Job;
    await new Promise((r) => setTimeout(r, 1500));
    expect((await job(queued.id)).status).toBe('queued');
    // Never sent to the updating runner (a runner refusal would show as assigned, then queued again).
    expect((await t.store.listEvents(queued.id, 0, 100)).map((e) => (e.type === 'status' ? e.data.status : e.type))).toEqual(['queued']);

    // The running job finishes normally, then the command runs, then the runner comes back.
    writeFileSync(napRelease(), '');
    await waitFor('nap to succeed', async () => (await job(nap.id)).status === 'succeeded', 30_000);
    await waitFor('the update command to run', () => existsSync(marker), 30_000);
    expect(readFileSync(marker, 'utf8')).toMatch(/^installed 9\.9\.9 pid \d+\n$/);
    const back = await waitFor('the runner back after the update', async () => {
      const entries = await activity(id);
      return entries.some((e) => e.kind === 'update' && /back after the update to 9\.9\.9/.test(e.text)) ? entries : null;
    }, 30_000);
    expect(back.filter((e) => e.kind === 'connected')).toHaveLength(2);
    expect(back.some((e) => e.kind === 'update' && /requested by/.test(e.text))).toBe(true);
    expect(back.some((e) => e.kind === 'update' && /installed; the runner restarts/.test(e.text))).toBe(true);
    await waitFor('upd-ok online again', async () => (await runner('upd-ok'))?.status === 'online' || (await runner('upd-ok'))?.status === 'busy', 10_000);
    // The job that waited runs on the restarted runner.
    await waitFor('the queued job to succeed', async () => (await job(queued.id)).status === 'succeeded', 30_000);
    expect(proc.output()).toContain('update installed: restarting the runner');
    expect(proc.exitCode).toBeNull(); // the first process stays, supervising the new one
    // nap ran in the first runner process, the later job in a new one whose parent is the first.
    const parents = readFileSync(join(dir.path, 'job-parents.txt'), 'utf8').trim().split('\n').map((l) => l.split(' '));
    expect(parents.map((p) => p[0])).toEqual(['nap', 'quick']);
    expect(Number(parents[0]![1])).toBe(proc.pid);
    const newPid = Number(parents[1]![1]);
    expect(newPid).not.toBe(proc.pid);
    expect(parentOf(newPid)).toBe(proc.pid);

    // A second update: the restarted runner exits for its supervisor (the first process), which
    // starts the next one: still one supervisor, no chain of processes.
    const again = await cli('runners', 'update', String(id), '--to', '9.9.10');
    expect(again.code).toBe(0);
    await waitFor('the second update back', async () => (await activity(id)).some((e) => /back after the update to 9\.9\.10/.test(e.text)), 30_000);
    const next = (await (await t.api('/api/jobs', { json: { agent: 'quick', input: {}, labels: { pool: 'ok' } } })).json()) as Job;
    await waitFor('a job on the third runner process', async () => (await job(next.id)).status === 'succeeded', 30_000);
    const third = Number(readFileSync(join(dir.path, 'job-parents.txt'), 'utf8').trim().split('\n').at(-1)!.split(' ')[1]);
    expect(third).not.toBe(newPid);
    expect(parentOf(third)).toBe(proc.pid);
    expect(alive(newPid)).toBe(false);

    // SIGTERM to the supervisor reaches the runner: both end, exit code 0.
    await stop(proc);
    expect(proc.exitCode).toBe(0);
    expect(alive(third)).toBe(false);
  }, 180_000);

  it('a failing update command (exit 3): a runner event names exit 3 and its stderr (secret masked); online again, not restarted', async () => {
    const script = join(dir.path, 'update-fail.sh');
    writeFileSync(script, '#!/bin/sh\necho "fetching flotilla@$FLOTILLA_UPDATE_VERSION"\necho "npm ERR! 404 Not Found: flotilla@$FLOTILLA_UPDATE_VERSION (auth flj_abcdefghijklmnop)" >&2\nexit 3\n');
    chmodSync(script, 0o755);
    const proc = await startRunner('upd-fail', 'fail', `sh ${script}`);
    const r0 = await waitFor('runner upd-fail online', async () => ((await runner('upd-fail'))?.status === 'online' ? runner('upd-fail') : null), 30_000);
    const id = r0!.id;

    const upd = await cli('runners', 'update', String(id), '--to', '0.0.1-nope', '--json');
    expect(upd.code).toBe(0);
    const body = JSON.parse(upd.out) as { runner: { status: string }; version: string; started: boolean };
    expect([body.runner.status, body.version, body.started]).toEqual(['updating', '0.0.1-nope', true]);
    const failed = await waitFor('the update_failed event', async () => (await activity(id)).find((e) => e.kind === 'update_failed'), 30_000);
    expect(failed.text).toContain('exit code 3');
    expect(failed.text).toContain('npm ERR! 404 Not Found: flotilla@0.0.1-nope');
    expect(failed.text).toContain('flj_***');
    expect(failed.text).not.toContain('abcdefghijklmnop');
    expect((await runner('upd-fail'))?.status).toBe('online');
    // Not restarted: one connection, the process never said it restarts; it takes jobs again.
    const entries = await activity(id);
    expect(entries.filter((e) => e.kind === 'connected')).toHaveLength(1);
    const j = (await (await t.api('/api/jobs', { json: { agent: 'quick', input: {}, labels: { pool: 'fail' } } })).json()) as Job;
    await waitFor('a job to run on it again', async () => (await job(j.id)).status === 'succeeded', 30_000);
    expect((await job(j.id)).runnerId).toBe(id);
    expect(proc.output()).not.toContain('restarting the runner');
  }, 90_000);
});

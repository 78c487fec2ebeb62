/**
 * The Python and Go clients (clients/python, clients/go; issue 6 item 5) run their own suites
 * here: each starts a real `flotilla up` (temp data dir, local runner, scripted model), starts a
 * hello-py job and follows its events to job.finished/succeeded, checks the typed errors per
 * status, SSE resume with Last-Event-ID, and that every path/method it uses is in /openapi.json.
 * Needs dist/ (npm test builds it first). Go is skipped, with a message, only when `go` is
 * missing and CI is not set (.ci/run installs golang-go).
 */
import { describe, it, expect } from 'vitest';
import { spawnSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './helpers.js';

const CI = Boolean(process.env.CI);

function has(cmd: string): boolean {
  return spawnSync(cmd, ['version'], { stdio: 'ignore' }).status === 0 || spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Runs a command to its end (async, so vitest's timeout applies); resolves with exit code and output. */
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, FLOTILLA_ROOT: ROOT, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

const hasGo = has('go');
if (!hasGo && !CI) console.warn('clients.test: `go` is not installed: skipping the Go client suite (apt-get install -y golang-go; CI installs it)');

describe('clients', () => {
  it('Python client (python3 -m unittest) against a real server', async () => {
    const r = await run('python3', ['-m', 'unittest', 'discover', '-v', '-s', 'tests', '-t', '.'], join(ROOT, 'clients', 'python'), { PYTHONDONTWRITEBYTECODE: '1' });
    expect(r.output).toMatch(/test_start_a_job_and_follow_it_to_the_end .* ok/);
    expect(r.output).toMatch(/\nOK\b/);
    expect(r.code, r.output).toBe(0);
  }, 240_000);

  it.skipIf(!hasGo && !CI)('Go client (go test ./...) against a real server', async () => {
    const r = await run('go', ['test', '-count=1', '-v', './...'], join(ROOT, 'clients', 'go'), { GOFLAGS: '-mod=mod', GO111MODULE: 'on' });
    expect(r.output).toContain('--- PASS: TestAgainstARealServer/start_a_job_and_follow_it_to_the_end');
    expect(r.code, r.output).toBe(0);
  }, 300_000);
});

/**
 * The built CLI (bin/flotilla.js, child processes) on money and budget pauses, against a real
 * control plane (SQLite, scripted model) and a real runner driving the real Claude Code:
 * - `run --local ... --budget 0.01 --json`: the job pauses on its budget at the first model
 *   call (its worst case is ≈ $0.58); the command ends (exit 1, as without --json) with
 *   `{"job": <paused job>}` last on stdout and a JSON error on stderr — it used to hang.
 * - USD options take plain decimals only: `0x10`, `1e1`, `+1`, `Infinity`, `` are refused
 *   (exit 2, naming the flag and the value) by `run --budget`, `budget --add` and
 *   `models price --input`, from the flag or its FLOTILLA_* variable.
 * - an attached `flotilla run` whose job paused says a top-up elsewhere resumes it and Ctrl-C
 *   cancels it; `flotilla budget JOB` says it is paused (`--json`: jobStatus); Ctrl-C then
 *   says the paused job is cancelled (will not resume) and how to leave jobs running.
 * - `costs --root 999`: exit 1 not found; `costs --by runner`: the runner's name and id.
 * - `models bogus`: unknown command naming the models commands, exit 2.
 * Needs `npx tsc -p tsconfig.build.json` first (bin/flotilla.js runs dist/).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { planeWithRunner, spawnFlotilla, waitFor } from './helpers.js';

/** Runs the built CLI (no FLOTILLA_* variable but those in `env`); stdout and stderr apart; SIGKILL after `ms`. */
async function cli(args: string[], env: Record<string, string> = {}, ms = 60_000): Promise<{ code: number; out: string; err: string; killed: boolean }> {
  const child = spawnFlotilla(args, { ANTHROPIC_API_KEY: '', FLOTILLA_LOG_LEVEL: 'error', ...env });
  let out = '';
  let err = '';
  let killed = false;
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (err += d));
  const timer = setTimeout(() => {
    killed = true;
    child.kill('SIGKILL');
  }, ms);
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
  clearTimeout(timer);
  return { code, out, err, killed };
}

const { dir, plane } = planeWithRunner({
  prefix: 'flotilla-money-cli-',
  before: () => {
    for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_')) delete process.env[k];
  },
});
const at = () => ['--server', plane.url, '--token', plane.adminToken];

describe('run --local --json on a job that pauses on its budget', () => {
  it('ends like the text form: exit 1, the paused job last on stdout, a JSON error naming the cancel', async () => {
    const home = join(dir, 'home');
    const args = ['run', '--local', 'test-fixer', '{"repo":"examples/calc"}', '--budget', '0.01'];
    const text = await cli([...args, '--data', join(dir, 'local-text')], { HOME: home }, 30_000);
    expect(text.killed).toBe(false);
    expect(text.code).toBe(1);
    expect(text.err).toMatch(/flotilla: job \d+ paused: its budget \(--budget 0\.01\) does not cover the next model call/);

    const json = await cli([...args, '--data', join(dir, 'local-json'), '--json'], { HOME: home }, 30_000);
    expect(json.killed, 'run --local --json hung on the paused job').toBe(false);
    expect(json.code).toBe(1);
    const lines = json.out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.at(-1)).toMatchObject({ job: { status: 'paused', endReason: 'budget' } });
    expect(lines.some((l) => l.type === 'status' && (l.data as { status?: string }).status === 'paused')).toBe(true);
    const errLine = json.err.trim().split('\n').at(-1)!;
    expect(JSON.parse(errLine)).toMatchObject({ error: { code: 'budget_paused', jobStatus: 'cancelled', message: expect.stringMatching(/paused: its budget \(--budget 0\.01\).*; job \d+ cancelled$/) } });
  }, 70_000);
});

describe('USD amounts are plain decimals', () => {
  it('run --budget, budget --add, models price --input refuse hex, exponent, sign, Infinity and empty (exit 2, naming flag and value); budget unchanged', async () => {
    // Queued for good (no runner has the label), so it holds no runner slot.
    const job = await plane.client.createJob({ agent: 'sleeper', input: {}, budgetUsd: 2, labels: { pool: 'nowhere' } });
    for (const bad of ['0x10', '1e1', '+1', '-1', 'Infinity', 'NaN', '', ' ', '0b11', '1_000']) {
      const run = await cli(['run', 'test-fixer', '--budget', bad, '--detach', ...at()]);
      expect([run.code, run.err], `--budget ${JSON.stringify(bad)}`).toEqual([2, expect.stringContaining(`--budget must be a positive number of US dollars, a plain decimal such as 1 or 0.5`)]);
      expect(run.err).toContain(`got ${JSON.stringify(bad)}`);
      const add = await cli(['budget', String(job.id), '--add', bad, ...at()]);
      expect([add.code, add.err], `--add ${JSON.stringify(bad)}`).toEqual([2, expect.stringContaining(`--add must be a positive number of US dollars, a plain decimal`)]);
      const price = await cli(['models', 'price', 'm-x', '--input', bad, '--output', '1', ...at()]);
      expect([price.code, price.err], `--input ${JSON.stringify(bad)}`).toEqual([2, expect.stringContaining('--input must be USD per million tokens (a number from 0 to 1000000), a plain decimal')]);
    }
    // From the variable too, named by commander with the flag.
    const env = await cli(['budget', String(job.id), ...at()], { FLOTILLA_BUDGET_ADD: '0x10' });
    expect(env.code).toBe(2);
    expect(env.err).toMatch(/option '--add <usd>' value '0x10' from env 'FLOTILLA_BUDGET_ADD' is invalid/);
    const json = await cli(['run', 'test-fixer', '--budget', '0x10', '--json', ...at()]);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.err)).toMatchObject({ error: { code: 'usage', message: expect.stringContaining('got "0x10"') } });
    // Nothing was added ($2 as created), and no job was submitted by the refused runs.
    expect((await plane.client.getBudget(job.id)).budget.limitMicros).toBe(2_000_000);
    expect((await plane.client.listJobs({})).jobs.map((j) => j.id)).toEqual([job.id]);
    // A plain decimal is taken: $2 + $0.25 = $2.25.
    const ok = await cli(['budget', String(job.id), '--add', '0.25', '--json', ...at()]);
    expect(ok.code, ok.err).toBe(0);
    expect(JSON.parse(ok.out)).toMatchObject({ budget: { limitMicros: 2_250_000 } });
    await plane.client.cancelJob(job.id);
  }, 120_000);
});

describe('an attached run paused on its budget, then interrupted', () => {
  it('says a top-up resumes it and Ctrl-C cancels it; budget says paused; Ctrl-C says it is cancelled; costs per runner by name', async () => {
    const child = spawnFlotilla(['run', 'test-fixer', '{"repo":"examples/calc"}', '--budget', '0.01', ...at()], { FLOTILLA_LOG_LEVEL: 'error' });
    let out = '';
    let err = '';
    child.stdout?.on('data', (d) => (out += d));
    child.stderr?.on('data', (d) => (err += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    try {
      const m = await waitFor('the paused line', () => /flotilla: job (\d+) is paused for budget/.exec(err), 60_000);
      const id = Number(m[1]);
      expect(err).toContain(`flotilla: job ${id} is paused for budget: \`flotilla budget ${id} --add USD\` from another shell resumes it; Ctrl-C here cancels it (run with --detach to leave jobs running)\n`);
      expect((await plane.client.getJob(id)).status).toBe('paused');

      const budgetJson = await cli(['budget', String(id), '--json', ...at()]);
      const shown = JSON.parse(budgetJson.out) as { resumeNeeds: { needMicros: number; short: { shortMicros: number }[] } };
      // The refused call's worst case (gateway/worst-case.ts): 32,000 max_tokens × 15 µ$ = $0.48
      // plus ⌈body bytes / 3⌉ tokens × 6 µ$ for Claude Code's ~50 KB first request (40–60 KB here). The body holds paths of this checkout and the
      // temporary folders, so its size moves by a few bytes from machine to machine: the need is
      // bounded here, and what is short must be exactly the need less the $0.010000 left.
      const need = shown.resumeNeeds.needMicros;
      expect(need).toBeGreaterThan(480_000 + Math.ceil(40_000 / 3) * 6);
      expect(need).toBeLessThan(480_000 + Math.ceil(60_000 / 3) * 6);
      expect(shown).toMatchObject({ jobId: id, jobStatus: 'paused', budget: { limitMicros: 10_000, remainingMicros: 10_000 }, resumeNeeds: { needMicros: need, short: [{ shortMicros: need - 10_000 }] } });
      const short = `0.${String(need - 10_000).padStart(6, '0')}`;
      const budget = await cli(['budget', String(id), ...at()]);
      expect(budget.code, budget.err).toBe(0);
      expect(budget.out).toMatch(new RegExp(`^paused:\\s+job ${id} is paused for budget: a top-up of at least \\$${short.replace('.', '\\.')} resumes it \\(flotilla budget ${id} --add USD\\)$`, 'm'));
      expect(budget.out).toMatch(/^budget:\s+\$0\.010000$/m);

      // The refused call is in the ledger under the runner: shown by name and id.
      const runnerRow = (await plane.store.listRunners()).find((r) => r.name === 'test-runner')!;
      const byRunner = await cli(['costs', '--by', 'runner', '--root', String(id), ...at()]);
      expect(byRunner.code, byRunner.err).toBe(0);
      // calls made 0 (as jobs show counts), refused 1, estimated 0
      expect(byRunner.out).toMatch(new RegExp(`^runner\\s+calls\\s+refused\\s+estimated\\s+input`, 'm'));
      expect(byRunner.out).toMatch(new RegExp(`^test-runner \\(${runnerRow.id}\\)\\s+0\\s+1\\s+0\\s`, 'm'));
      const byRunnerJson = await cli(['costs', '--by', 'runner', '--root', String(id), '--json', ...at()]);
      expect(JSON.parse(byRunnerJson.out).rows).toEqual([expect.objectContaining({ key: String(runnerRow.id), name: 'test-runner', calls: 1, refusedCalls: 1 })]);

      child.kill('SIGINT');
      expect(await exited).toBe(130);
      expect(err).toContain(`\nflotilla: interrupted: cancelling job ${id}, paused for budget: it will not resume (run with --detach to leave jobs running)\nflotilla: job ${id} cancelled\n`);
      expect((await plane.client.getJob(id)).status).toBe('cancelled');
    } finally {
      child.kill('SIGKILL');
    }
  }, 120_000);
});

describe('costs and models: unknown job, unknown subcommand', () => {
  it('costs --root 999: exit 1, not found naming the job (text and --json)', async () => {
    const text = await cli(['costs', '--root', '999', ...at()]);
    expect([text.code, text.out, text.err]).toEqual([1, '', 'flotilla: --root 999: no job 999 (flotilla jobs lists them)\n']);
    const json = await cli(['costs', '--root', '999', '--json', ...at()]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.err)).toEqual({ error: { code: 'not_found', status: 404, field: 'root', message: '--root 999: no job 999 (flotilla jobs lists them)' } });
  });

  it('costs over $9.007M (2^53 n$): the table and --json work, the µ$ total exact, costNanos left out (fresh-tester finding: exit 1, "is it the Flotilla control plane?")', async () => {
    const job = await plane.client.createJob({ agent: 'sleeper', input: {}, budgetUsd: 1, labels: { pool: 'nowhere' } });
    const row = { jobId: job.id, attempt: 1, provider: 'anthropic', model: 'claude-sonnet-4-5', api: 'anthropic-messages', streamed: false, httpStatus: 200, inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, usageKnown: true, runnerId: null, startedAt: Date.now(), durationMs: 1 };
    await plane.store.recordModelCall({ ...row, costMicros: 5_000_000_000_000, costNanos: 5_000_000_000_000_000 });
    await plane.store.recordModelCall({ ...row, costMicros: 5_000_000_000_001, costNanos: 5_000_000_000_000_601 });
    const text = await cli(['costs', '--root', String(job.id), ...at()]);
    expect([text.code, text.err]).toEqual([0, '']);
    expect(text.out).toContain('10000000.000001');
    const json = await cli(['costs', '--root', String(job.id), '--json', ...at()]);
    expect(json.code, json.err).toBe(0);
    const body = JSON.parse(json.out) as { total: Record<string, unknown>; rows: Array<Record<string, unknown>> };
    expect(body.total).toMatchObject({ calls: 2, costMicros: 10_000_000_000_001 });
    expect(body.total).not.toHaveProperty('costNanos');
    expect(body.rows[0]).not.toHaveProperty('costNanos');
    await plane.client.cancelJob(job.id);
  });

  it('models bogus: unknown command listing the models commands, exit 2 (text and --json)', async () => {
    const text = await cli(['models', 'bogus', ...at()]);
    expect(text.code).toBe(2);
    expect(text.err).toMatch(/^flotilla: unknown command 'bogus' \(models commands: list, set, default, delete, price\)\n/);
    const json = await cli(['models', 'bogus', '--json', ...at()]);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.err)).toEqual({ error: { code: 'usage', message: "unknown command 'bogus' (models commands: list, set, default, delete, price)" } });
    // The default subcommand still runs without a word, and by name.
    expect((await cli(['models', '--json', ...at()])).code).toBe(0);
    expect((await cli(['models', 'list', ...at()])).code).toBe(0);
  });
});

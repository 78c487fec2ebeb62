import { createInterface } from 'node:readline/promises';
import { Command, Option } from 'commander';
import { ApiError } from '../../client/index.js';
import type { CliContext } from '../context.js';
import { CliError, addClientOptions, clientFrom, parseJobId, wantsJson, type ClientOptions } from '../options.js';
import { resolveRunner } from './fleet-util.js';

/** Asks a yes/no question on the terminal; false when stdin is not a terminal. */
async function confirm(question: string, ctx: CliContext): Promise<boolean> {
  if (!process.stdin.isTTY) return false;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    ctx.io.stderr.write('');
    const answer = await rl.question(`${question} [y/N] `);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/**
 * `flotilla jobs start JOB [--runner R] [--force]` (admin): place a queued job now. When that
 * would use a held runner or go past a runner's capacity, it asks first on a terminal (and
 * fails elsewhere, exit 1); `--force` places it anyway.
 */
export function registerJobsStart(program: Command, ctx: CliContext): void {
  const jobs = program.commands.find((c) => c.name() === 'jobs');
  if (!jobs) throw new Error('registerJobsStart: register the jobs command first');
  const out = (s: string) => ctx.io.stdout.write(s + '\n');
  const start = jobs
    .command('start')
    .description('place a queued job on a runner now (asks before going past capacity or a hold)')
    .argument('<id>', 'job id', parseJobId)
    .addOption(new Option('--runner <runner>', 'on this runner (id or name)').env('FLOTILLA_RUNNER'))
    .addOption(new Option('--force', 'place it even past capacity or on a held runner').env('FLOTILLA_FORCE'));
  addClientOptions(start).action(async (id: number, opts: ClientOptions & { runner?: string; force?: boolean }, self: Command) => {
    // `--runner ""` / FLOTILLA_RUNNER= (it let the scheduler place the job anywhere) is refused before this (options.ts refuseEmptyValues).
    const client = await clientFrom(opts);
    const runnerId = opts.runner ? await resolveRunner(client, opts.runner) : undefined;
    const req = { ...(runnerId !== undefined ? { runnerId } : {}) };
    let job;
    try {
      job = await client.startJob(id, { ...req, force: opts.force === true });
    } catch (err) {
      if (!(err instanceof ApiError) || (err.code !== 'over_capacity' && err.code !== 'on_hold')) throw err;
      if (!(await confirm(`${err.message.replace(/; use --force.*$/, '')}. Place job ${id} anyway?`, ctx))) {
        throw new CliError(`job ${id} not started: ${err.message}`);
      }
      job = await client.startJob(id, { ...req, force: true });
    }
    if (wantsJson(self, opts)) return void out(JSON.stringify({ job }));
    // The runner by name, as the user knows it (the id alone if it cannot be read now).
    const runner = job.runnerId !== null ? await client.getRunner(job.runnerId).then((d) => d.runner, () => null) : null;
    const where = runner ? `${runner.name} (${runner.id})` : `${job.runnerId ?? '?'}`;
    out(`job ${job.id} ${job.status} on runner ${where} (attempt ${job.attempt})`);
  });
}

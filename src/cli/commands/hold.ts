import { Command, Option } from 'commander';
import { HoldDuration, type Runner } from '../../protocol/index.js';
import type { CliContext } from '../context.js';
import { CliError, addClientOptions, clientFrom, wantsJson, type ClientOptions } from '../options.js';
import { resolveRunner } from './fleet-util.js';

/**
 * `flotilla hold RUNNER --for 15m|1h|3h|6h|1d --reason TEXT [--extend]` and
 * `flotilla resume RUNNER` (admin): pause / restart automatic dispatch to one runner.
 * `--extend` without `--reason` keeps the current reason. `resume` of a runner not on hold
 * changes nothing and says `was not on hold` (exit 0, like a second resume).
 */
export function registerHold(program: Command, ctx: CliContext): void {
  const out = (s: string) => ctx.io.stdout.write(s + '\n');
  const hold = program
    .command('hold')
    .description('stop giving queued jobs to a runner for a while (running jobs go on; jobs start --force still can)')
    .argument('<runner>', 'runner id or name')
    .addOption(new Option('--for <duration>', 'how long').choices(HoldDuration.options).env('FLOTILLA_HOLD_FOR').makeOptionMandatory())
    .addOption(new Option('--reason <text>', 'why (shown in flotilla runners); required unless --extend, which keeps the current one').env('FLOTILLA_HOLD_REASON'))
    .addOption(new Option('--extend', 'add the duration to the end of the current hold').env('FLOTILLA_HOLD_EXTEND'));
  addClientOptions(hold).action(async (runner: string, opts: ClientOptions & { for: HoldDuration; reason?: string; extend?: boolean }, self: Command) => {
    const reason = opts.reason?.trim();
    if (!reason && !opts.extend) throw new CliError('hold: --reason is required (only --extend may leave it out, keeping the current reason)', 2);
    const client = await clientFrom(opts);
    const id = await resolveRunner(client, runner);
    const r = await client.holdRunner(id, { for: opts.for, ...(reason ? { reason } : {}), extend: opts.extend === true });
    if (wantsJson(self, opts)) return void out(JSON.stringify({ runner: r }));
    out(`runner ${r.name} (${r.id}) on hold until ${r.hold?.until ?? '?'}: ${r.hold?.reason ?? reason ?? ''}`);
  });

  const resume = program.command('resume').description('end a runner’s hold: it takes queued jobs again').argument('<runner>', 'runner id or name');
  addClientOptions(resume).action(async (runner: string, opts: ClientOptions, self: Command) => {
    const client = await clientFrom(opts);
    const id = await resolveRunner(client, runner);
    // Resuming is idempotent (exit 0 either way), but the message must say what happened.
    const wasHeld = (await client.getRunner(id)).runner.hold != null;
    const r: Runner = await client.resumeRunner(id);
    if (wantsJson(self, opts)) return void out(JSON.stringify({ runner: r, wasHeld }));
    out(wasHeld ? `runner ${r.name} (${r.id}) resumed: ${r.status}` : `runner ${r.name} (${r.id}) was not on hold: ${r.status}`);
  });
}

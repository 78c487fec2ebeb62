import { Command, InvalidArgumentError, Option } from 'commander';
import { EffortLevel, EffortTierName, type EffortTierList } from '../../protocol/index.js';
import type { CliContext } from '../context.js';
import { formatTable } from '../format.js';
import { addClientOptions, CliError, clientFrom, wantsJson, type ClientOptions } from '../options.js';

function tierName(text: string): string {
  const r = EffortTierName.safeParse(text);
  if (!r.success) throw new InvalidArgumentError(`NAME ${r.error.issues[0]?.message ?? 'is invalid'}`);
  return text;
}

function level(text: string): EffortLevel {
  const r = EffortLevel.safeParse(text);
  if (!r.success) throw new InvalidArgumentError(`--effort must be one of ${EffortLevel.options.join(', ')}`);
  return r.data;
}

/** Human-readable table of an {@link EffortTierList}. */
export function describeTiers(v: EffortTierList): string {
  const rows = v.tiers.map((t) => [t.name + (t.name === v.defaultTier ? ' (default)' : ''), t.model, t.level, t.source, t.updatedAt ?? '-']);
  return formatTable(['NAME', 'MODEL', 'EFFORT', 'SOURCE', 'UPDATED'], rows);
}

/**
 * `flotilla tiers ...`: effort tiers (issue 8; a named preset = model + effort level).
 * - `tiers list` (default): the tiers in effect, built-in / configured / account (members read);
 * - `tiers set NAME --model M --effort L` (admin; env FLOTILLA_TIER_MODEL, FLOTILLA_TIER_EFFORT):
 *   create or replace an account tier;
 * - `tiers delete NAME` (admin): remove an account tier.
 * - `tiers default NAME` / `tiers default --clear` (admin): set the account default tier, stored
 *   on the server (wins over its FLOTILLA_DEFAULT_EFFORT), or remove it; an unknown NAME is an
 *   API error naming the known tiers.
 * Every subcommand takes --server/--token/--data/--json. Exit 0 on success; 1 on an API error
 * (not an admin, unknown tier: the message names it); 2 on a bad argument.
 */
export function registerTiers(program: Command, ctx: CliContext): void {
  const out = (s: string) => ctx.io.stdout.write(s + '\n');
  const tiers = program.command('tiers').description('effort tiers: named presets of model + effort level');

  addClientOptions(tiers.command('list', { isDefault: true }).description('the tiers in effect (built-in, configured, account)')).action(async (opts: ClientOptions, self: Command) => {
    const view = await (await clientFrom(opts)).listEffortTiers();
    out(wantsJson(self, opts) ? JSON.stringify(view) : describeTiers(view));
  });

  type SetOpts = ClientOptions & { model?: string; effort?: EffortLevel };
  addClientOptions(
    tiers
      .command('set')
      .description('create or replace an account tier (admin)')
      .argument('<name>', 'tier name (lower-case letters, digits, -)', tierName)
      .addOption(new Option('--model <model>', 'the model the harness is given').env('FLOTILLA_TIER_MODEL'))
      .addOption(new Option('--effort <level>', EffortLevel.options.join(' | ')).env('FLOTILLA_TIER_EFFORT').argParser(level)),
  ).action(async (name: string, opts: SetOpts, self: Command) => {
    if (!opts.model || opts.model.trim() === '') throw new CliError('tiers set: --model is required (or FLOTILLA_TIER_MODEL)', 2);
    if (!opts.effort) throw new CliError(`tiers set: --effort is required (${EffortLevel.options.join(', ')}; or FLOTILLA_TIER_EFFORT)`, 2);
    const t = await (await clientFrom(opts)).setEffortTier(name, opts.model, opts.effort);
    out(wantsJson(self, opts) ? JSON.stringify(t) : `tier set: ${t.name} → ${t.model} at effort ${t.level}`);
  });

  type DefaultOpts = ClientOptions & { clear?: boolean };
  addClientOptions(
    tiers
      .command('default')
      .description("set the account's default tier (admin); --clear falls back to the server's FLOTILLA_DEFAULT_EFFORT")
      .argument('[name]', 'tier name (a tier in effect: see `tiers list`)', tierName)
      .addOption(new Option('--clear', 'remove the account default').env('FLOTILLA_TIER_DEFAULT_CLEAR')),
  ).action(async (name: string | undefined, opts: DefaultOpts, self: Command) => {
    if (opts.clear && name) throw new CliError('tiers default: give a NAME or --clear, not both', 2);
    if (!opts.clear && !name) throw new CliError('tiers default: NAME is required (or --clear)', 2);
    const view = await (await clientFrom(opts)).setDefaultEffortTier(opts.clear ? null : name!);
    out(wantsJson(self, opts) ? JSON.stringify(view) : view.defaultTier ? `default tier: ${view.defaultTier} (${view.defaultSource})` : 'default tier: none');
  });

  addClientOptions(tiers.command('delete').description('remove an account tier (admin)').argument('<name>', 'tier name', tierName)).action(async (name: string, opts: ClientOptions, self: Command) => {
    await (await clientFrom(opts)).deleteEffortTier(name);
    out(wantsJson(self, opts) ? JSON.stringify({ deleted: name }) : `tier deleted: ${name}`);
  });
}

import { Command, Option } from 'commander';
import type { Labels, Runner } from '../../protocol/index.js';
import type { CliContext } from '../context.js';
import { formatTable } from '../format.js';
import { addClientOptions, clientFrom, intIn, parseLabels, wantsJson, type ClientOptions } from '../options.js';

/** Formats labels as `k=v,k2=v2` (the form `--labels` takes). */
export function labelText(labels: Labels): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** `flotilla runners [list]` and `flotilla runners token create [--labels k=v,...] [--ttl SECONDS]`. */
export function registerRunners(program: Command, ctx: CliContext): void {
  const runners = program.command('runners').description('list runners and create runner registration tokens');
  const out = (s: string) => ctx.io.stdout.write(s + '\n');

  const list = runners.command('list', { isDefault: true }).description('list registered runners');
  addClientOptions(list).action(async (opts: ClientOptions, self: Command) => {
    const client = await clientFrom(opts);
    const all = await client.listRunners();
    if (wantsJson(self, opts)) return void out(JSON.stringify({ runners: all }));
    if (all.length === 0) return void out('no runners (start one with: flotilla runner --server URL --token TOKEN)');
    out(formatTable(['id', 'name', 'status', 'labels', 'capacity', 'running', 'last heartbeat'], all.map(runnerRow)));
  });

  const token = runners.command('token').description('runner registration tokens');
  const create = token
    .command('create')
    .description('create a single-use token a new runner registers with (admin)')
    .addOption(new Option('--labels <k=v,...>', 'labels the runner gets').env('FLOTILLA_LABELS').argParser(parseLabels))
    .addOption(new Option('--ttl <seconds>', 'how long the token stays valid').argParser(intIn(1, 30 * 24 * 3600, 'ttl')).default(3600));
  addClientOptions(create).action(async (opts: ClientOptions & { labels?: Labels; ttl: number }, self: Command) => {
    const client = await clientFrom(opts);
    const t = await client.createRunnerToken({ labels: opts.labels ?? {}, expiresInSeconds: opts.ttl });
    if (wantsJson(self, opts)) return void out(JSON.stringify(t));
    const labels = opts.labels && Object.keys(opts.labels).length > 0 ? ` --labels ${labelText(opts.labels)}` : '';
    out(t.token);
    ctx.io.stderr.write(
      `single use, valid until ${typeof t.expiresAt === 'number' ? new Date(t.expiresAt).toISOString() : t.expiresAt}; on the new machine run:\n` +
        `  flotilla runner --server ${client.url} --token ${t.token}${labels}\n`,
    );
  });
}

function runnerRow(r: Runner): string[] {
  return [String(r.id), r.name, r.status, labelText(r.labels), String(r.capacity), r.runningJobs.join(','), r.lastHeartbeatAt ?? ''];
}

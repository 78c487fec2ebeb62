import { Command, Option } from 'commander';
import { formatMicros } from '../../core/money.js';
import { InvalidArgumentError } from 'commander';
import { CostGroup, parseSince, SINCE_RULE } from '../../protocol/index.js';
import type { CliContext } from '../context.js';
import { cut, formatTable } from '../format.js';
import { ApiError } from '../../client/index.js';
import { addClientOptions, clientFrom, parseJobId, wantsJson, type ClientOptions } from '../options.js';

/** `--since`: checked here (exit 2) with the server's own rule (protocol parseSince), sent as given. */
function sinceArg(text: string): string {
  if (parseSince(text, Date.now()) === null) throw new InvalidArgumentError(`--since must be ${SINCE_RULE}`);
  return text;
}

/**
 * `flotilla costs [--by job|tree|agent|runner|day|task] [--since 7d] [--root JOB] [--json]`: the
 * gateway ledger's model calls, tokens and dollars per group (env FLOTILLA_COSTS_BY,
 * FLOTILLA_COSTS_SINCE, FLOTILLA_COSTS_ROOT), biggest first (`--by day`: UTC days, newest
 * first), with a total line. `--since` dates and times are UTC unless they give an offset. `--by runner`
 * shows each runner as `name (id)`. An unknown `--root` job: exit 1, `--json` code `not_found`, status 404, field `root`.
 */
export function registerCosts(program: Command, ctx: CliContext): void {
  const out = (s: string) => ctx.io.stdout.write(s + '\n');
  const cmd = program
    .command('costs')
    .description('model calls, tokens and dollars per job, tree, agent, runner, day or task')
    .addOption(new Option('--by <group>', 'group by').choices(CostGroup.options).default('agent').env('FLOTILLA_COSTS_BY'))
    .addOption(new Option('--since <when>', 'window: 30m, 12h, 7d, 2w, or an ISO-8601 date or date-time, UTC unless it gives an offset (2026-11-01, 2026-11-01T09:00+02:00)').default('30d').env('FLOTILLA_COSTS_SINCE').argParser(sinceArg))
    .addOption(new Option('--root <job>', 'only this job tree').argParser(parseJobId).env('FLOTILLA_COSTS_ROOT'));
  addClientOptions(cmd).action(async (opts: ClientOptions & { by: CostGroup; since: string; root?: number }, self: Command) => {
    const client = await clientFrom(opts);
    // An unknown --root is an error (exit 1, `not_found`), not an empty rollup.
    if (opts.root !== undefined) {
      const root = opts.root;
      await client.getJob(root).catch((err: unknown) => {
        // as the API's own 404 (status and field in --json, as `jobs show` and `budget` give them)
        if (err instanceof ApiError && err.status === 404) throw new ApiError(404, 'not_found', `--root ${root}: no job ${root} (flotilla jobs lists them)`, 'root');
        throw err;
      });
    }
    const r = await client.costs({ by: opts.by, since: opts.since, ...(opts.root !== undefined ? { root: opts.root } : {}) });
    if (wantsJson(self, opts)) return void out(JSON.stringify(r));
    if (r.rows.length === 0) return void out(`no model calls since ${r.since}`);
    // calls made (as `jobs show` counts them), then the refused ones and the estimated ones
    const row = (key: string, x: (typeof r.rows)[number] | typeof r.total) => [
      key,
      String(x.calls - x.refusedCalls),
      String(x.refusedCalls),
      String(x.estimatedCalls),
      String(x.inputTokens),
      String(x.outputTokens),
      String(x.cacheReadTokens),
      String(x.cacheWriteTokens),
      formatMicros(x.costMicros),
    ];
    out(formatTable([opts.by, 'calls', 'refused', 'estimated', 'input', 'output', 'cache read', 'cache write', 'cost'], [...r.rows.map((x) => row(x.name !== undefined ? `${cut(x.name, 50)} (${x.key})` : x.key, x)), row('total', r.total)]));
  });
}

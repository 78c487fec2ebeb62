import { Command, Option } from 'commander';
import { ReceiverProvider, type CreatedReceiver, type Receiver } from '../../protocol/index.js';
import type { CliContext } from '../context.js';
import { formatTable } from '../format.js';
import { CliError, addClientOptions, clientFrom, intIn, parseIdArg, wantsJson, type ClientOptions } from '../options.js';

const parseId = parseIdArg('receiver id');

/** What to paste into the forge's webhook form for this receiver (secret shown only when given). */
export function receiverSetup(r: Receiver, serverUrl: string, secret?: string): string {
  const url = `${serverUrl.replace(/\/+$/, '')}${r.path}`;
  const s = secret ?? '(shown only when created)';
  const lines = [`receiver ${r.name} (${r.id}), ${r.provider}`, `  URL:    ${url}`, `  secret: ${s}`];
  if (r.provider === 'github') {
    lines.push(
      'GitHub: repository (or organization) → Settings → Webhooks → Add webhook:',
      `  Payload URL: ${url}`,
      '  Content type: application/json',
      `  Secret: ${s}`,
      '  SSL verification: enabled',
      '  Events: "Let me select individual events" → Issues, Issue comments, Pull requests, Pull request reviews, Pull request review comments',
    );
  } else if (r.provider === 'gitea') {
    lines.push(
      'Gitea / Forgejo: repository → Settings → Webhooks → Add webhook → Gitea (or Forgejo):',
      `  Target URL: ${url}`,
      '  HTTP method: POST; POST content type: application/json',
      `  Secret: ${s}`,
      '  Trigger on: Custom events → Issues, Issue comment, Pull request, Pull request comment, Pull request reviewed',
    );
  } else if (r.auth === 'bearer') {
    lines.push('Generic: POST JSON to the URL with header', `  Authorization: Bearer ${s}`, `  routed by CEL: ${r.keyExpr ?? '-'}`);
  } else {
    lines.push('Generic: POST JSON to the URL with header', '  X-Signature-256: sha256=<hex HMAC-SHA256 of the body with the secret>', `  routed by CEL: ${r.keyExpr ?? '-'}`);
  }
  if (r.policies.assign) lines.push(`Policy: issues/PRs assigned to ${r.policies.assign.login} start a task of agent ${r.policies.assign.agent}`);
  return lines.join('\n');
}

/** `flotilla receivers [list]`, `receivers create NAME --provider P`, `receivers show|delete ID` (issue 7). */
export function registerReceivers(program: Command, ctx: CliContext): void {
  const out = (s: string) => ctx.io.stdout.write(s + '\n');
  const receivers = program.command('receivers').description('webhook endpoints (GitHub, Gitea/Forgejo, generic JSON) that wake tasks');

  const list = receivers.command('list', { isDefault: true }).description('list receivers');
  addClientOptions(list).action(async (opts: ClientOptions, self: Command) => {
    const client = await clientFrom(opts);
    const rows = await client.listReceivers();
    if (wantsJson(self, opts)) return void out(JSON.stringify({ receivers: rows }));
    if (rows.length === 0) return void out('no receivers');
    out(formatTable(['id', 'name', 'provider', 'auth', 'url', 'assign'], rows.map((r) => [String(r.id), r.name, r.provider, r.auth, `${client.url}${r.path}`, r.policies.assign ? `${r.policies.assign.login} → ${r.policies.assign.agent}` : '-'])));
  });

  const create = receivers
    .command('create')
    .description('create a receiver; prints its URL, its secret (this once) and what to paste into GitHub or Gitea')
    .argument('<name>', 'lowercase letters, digits and dashes (part of the URL)')
    .addOption(new Option('--provider <provider>', 'who sends').choices(ReceiverProvider.options).env('FLOTILLA_RECEIVER_PROVIDER').makeOptionMandatory())
    .addOption(new Option('--auth <kind>', 'generic only: bearer token or HMAC signature').choices(['hmac', 'bearer']).env('FLOTILLA_RECEIVER_AUTH'))
    .addOption(new Option('--key-expr <cel>', 'generic only: CEL expression over payload giving the resource key, e.g. payload.groupKey').env('FLOTILLA_RECEIVER_KEY_EXPR'))
    .addOption(new Option('--summary-expr <cel>', 'generic only: CEL expression giving the text the agent sees').env('FLOTILLA_RECEIVER_SUMMARY_EXPR'))
    .addOption(new Option('--fallback-task <id>', 'task that gets events nobody owns').argParser(parseIdArg('fallback task id')).env('FLOTILLA_RECEIVER_FALLBACK_TASK'))
    .addOption(new Option('--assign-login <login>', 'issues/PRs assigned to this account start a task (needs --assign-agent)').env('FLOTILLA_RECEIVER_ASSIGN_LOGIN'))
    .addOption(new Option('--assign-agent <agent>', 'the agent of tasks started by an assignment').env('FLOTILLA_RECEIVER_ASSIGN_AGENT'))
    .addOption(new Option('--coalesce <seconds>', 'coalescing window of tasks it starts (default 180)').argParser(intIn(0, 86_400, 'coalesce')).env('FLOTILLA_RECEIVER_COALESCE'))
    .addOption(new Option('--no-complete-on-close', 'closing an issue/PR does not complete its task').env('FLOTILLA_RECEIVER_NO_COMPLETE_ON_CLOSE'))
    .addOption(new Option('--no-wake-on-reopen', 'reopening does not wake its task').env('FLOTILLA_RECEIVER_NO_WAKE_ON_REOPEN'));
  addClientOptions(create).action(
    async (
      name: string,
      opts: ClientOptions & { provider: ReceiverProvider; auth?: 'hmac' | 'bearer'; keyExpr?: string; summaryExpr?: string; fallbackTask?: number; assignLogin?: string; assignAgent?: string; coalesce?: number; completeOnClose: boolean; wakeOnReopen: boolean },
      self: Command,
    ) => {
      if ((opts.assignLogin === undefined) !== (opts.assignAgent === undefined)) throw new CliError('--assign-login and --assign-agent go together', 2);
      const client = await clientFrom(opts);
      const created: CreatedReceiver = await client.createReceiver({
        name,
        provider: opts.provider,
        ...(opts.auth ? { auth: opts.auth } : {}),
        ...(opts.keyExpr ? { keyExpr: opts.keyExpr } : {}),
        ...(opts.summaryExpr ? { summaryExpr: opts.summaryExpr } : {}),
        ...(opts.fallbackTask ? { fallbackTaskId: opts.fallbackTask } : {}),
        policies: {
          completeOnClose: opts.completeOnClose,
          wakeOnReopen: opts.wakeOnReopen,
          ...(opts.assignLogin !== undefined && opts.assignAgent !== undefined ? { assign: { login: opts.assignLogin, agent: opts.assignAgent, ...(opts.coalesce !== undefined ? { coalesceSeconds: opts.coalesce } : {}) } } : {}),
        },
      });
      if (wantsJson(self, opts)) return void out(JSON.stringify({ ...created, url: `${client.url}${created.receiver.path}` }));
      out(receiverSetup(created.receiver, client.url, created.secret));
      out('The secret is shown only now: store it in the forge, not in files.');
    },
  );

  const show = receivers.command('show').description('show a receiver and the settings to paste into the forge (without its secret)').argument('<id>', 'receiver id', parseId);
  addClientOptions(show).action(async (id: number, opts: ClientOptions, self: Command) => {
    const client = await clientFrom(opts);
    const r = await client.getReceiver(id);
    if (wantsJson(self, opts)) return void out(JSON.stringify({ receiver: r, url: `${client.url}${r.path}` }));
    out(receiverSetup(r, client.url));
  });

  const del = receivers.command('delete').description('delete a receiver (its deliveries go; recorded events stay)').argument('<id>', 'receiver id', parseId);
  addClientOptions(del).action(async (id: number, opts: ClientOptions, self: Command) => {
    await (await clientFrom(opts)).deleteReceiver(id);
    if (wantsJson(self, opts)) return void out(JSON.stringify({ deleted: id }));
    out(`receiver ${id} deleted`);
  });
}

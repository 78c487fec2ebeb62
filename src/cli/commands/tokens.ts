import { Command, InvalidArgumentError, Option } from 'commander';
import { CreateApiTokenRequest, Role } from '../../protocol/index.js';
import type { CliContext } from '../context.js';
import { formatTable } from '../format.js';
import { addClientOptions, clientFrom, parseIdArg, wantsJson, type ClientOptions } from '../options.js';

/**
 * NAME of a new token: what the API takes (one line of 1–100 characters, not only spaces),
 * checked before any request; the refusal gives the API's own reason (a name with a newline was
 * told it must be 1-100 characters: fresh-tester finding).
 */
function tokenName(text: string): string {
  const r = CreateApiTokenRequest.shape.name.safeParse(text);
  if (text.trim() === '' || text.length > 100) throw new InvalidArgumentError('NAME must be 1-100 characters, not only spaces (e.g. ci or alice-laptop)');
  if (!r.success) throw new InvalidArgumentError(`NAME: ${r.error.issues[0]?.message ?? 'not a token name'} (e.g. ci or alice-laptop)`);
  return text;
}

/**
 * `flotilla tokens ...`: API tokens (`fla_...`) for scripts and people (admin; API in
 * server/routes/api-tokens.ts).
 * - `tokens list` (default): id, name, role, created (never a token); `--json` → the API's
 *   `{ tokens: ApiTokenInfo[] }`;
 * - `tokens create NAME --role admin|member` (env FLOTILLA_TOKENS_ROLE): prints the token on
 *   stdout, this once (the server keeps only its hash), how to use and revoke it on stderr;
 *   `--json` → the API's CreatedApiToken;
 * - `tokens revoke ID`: the token stops working at once (within 1 s on other replicas);
 *   `--json` → `{ revoked: ID }`. The token of this very call cannot revoke itself (409).
 * Every subcommand takes --server/--token/--data/--json. Exit 0 on success; 1 on an API error
 * (not an admin, unknown id: the message names it); 2 on a bad argument.
 */
export function registerTokens(program: Command, ctx: CliContext): void {
  const out = (s: string) => ctx.io.stdout.write(s + '\n');
  const tokens = program.command('tokens').description('API tokens for scripts and people (admin): list, create, revoke');

  const list = tokens.command('list', { isDefault: true }).description('list API tokens: id, name, role, created (never the token itself)');
  addClientOptions(list).action(async (opts: ClientOptions, self: Command) => {
    const rows = await (await clientFrom(opts)).listApiTokens();
    if (wantsJson(self, opts)) return void out(JSON.stringify({ tokens: rows }));
    if (rows.length === 0) return void out('no API tokens');
    out(formatTable(['id', 'name', 'role', 'created'], rows.map((t) => [String(t.id), t.name, t.role, t.createdAt])));
  });

  const create = tokens
    .command('create')
    .description('create an API token; prints it this once (the server keeps only its hash)')
    .argument('<name>', 'what the token is for, e.g. ci or alice-laptop (1-100 characters)', tokenName)
    .addOption(new Option('--role <role>', 'admin: every action; member: reads everything, changes nothing').choices(Role.options).env('FLOTILLA_TOKENS_ROLE').makeOptionMandatory());
  addClientOptions(create).action(async (name: string, opts: ClientOptions & { role: Role }, self: Command) => {
    const client = await clientFrom(opts);
    const t = await client.createApiToken({ name, role: opts.role });
    if (wantsJson(self, opts)) return void out(JSON.stringify(t));
    out(t.token);
    ctx.io.stderr.write(
      `API token ${t.id} "${t.name}" (${t.role}) created; it is shown only now: keep it in a secret store.\n` +
        `  use it:    FLOTILLA_SERVER=${client.url} FLOTILLA_TOKEN=<token> flotilla jobs\n` +
        `  revoke it: flotilla tokens revoke ${t.id}\n`,
    );
  });

  const revoke = tokens
    .command('revoke')
    .description('revoke an API token: it stops working at once')
    .argument('<id>', 'token id (see flotilla tokens list)', parseIdArg('token id'));
  addClientOptions(revoke).action(async (id: number, opts: ClientOptions, self: Command) => {
    await (await clientFrom(opts)).revokeApiToken(id);
    if (wantsJson(self, opts)) return void out(JSON.stringify({ revoked: id }));
    out(`API token ${id} revoked`);
  });
}

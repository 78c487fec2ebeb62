import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import type { CliContext } from '../context.js';
import { cut, formatTable } from '../format.js';
import { addClientOptions, clientFrom, wantsJson, type ClientOptions } from '../options.js';

/**
 * `flotilla agents [list]`: the agents the server knows, with version and source (installed
 * agents) or `folder` (agents loaded from the server's agents folders).
 * `flotilla agents install <git-url|path> [--ref REF] [--replace]`: installs a repository of agents as a
 * new version of each (issue 6); exits 1 naming the file and field when one is bad.
 */
export function registerAgents(program: Command, ctx: CliContext): void {
  const out = (s: string) => ctx.io.stdout.write(s + '\n');
  const agents = program.command('agents').description('list the agents the server can run, install agent repositories');
  const list = agents.command('list', { isDefault: true }).description('list agents with their version and source');
  addClientOptions(list).action(async (opts: ClientOptions, self: Command) => {
    const client = await clientFrom(opts);
    const [all, versions] = await Promise.all([client.listAgents(), client.listAgentVersions()]);
    const current = new Map(versions.filter((v) => v.current).map((v) => [v.name, v]));
    if (wantsJson(self, opts)) {
      return void out(JSON.stringify({ agents: all.map((a) => ({ ...a, installed: current.get(a.name) ?? null })) }));
    }
    if (all.length === 0) return void out('no agents');
    out(
      formatTable(
        ['name', 'version', 'harness', 'model', 'source', 'description'],
        all.map((a) => {
          const v = current.get(a.name);
          const source = v ? `${v.source}${v.ref ? `@${v.ref}` : ''}` : 'folder';
          return [a.name, a.version, a.harness, a.model, cut(source, 50), cut(a.description, 50)];
        }),
      ),
    );
  });

  const install = agents
    .command('install')
    .description('install a repository of agent definitions (git URL, git repository path, or plain folder) as a new version of each agent')
    .argument('<source>', 'git URL, or a path (made absolute here; the server must see the same path)')
    .addOption(new Option('--ref <ref>', 'branch, tag or commit to install (git only; default HEAD)').env('FLOTILLA_AGENTS_REF'))
    .addOption(new Option('--replace', 'let an agent replace the built-in agent of the same name (refused otherwise)').env('FLOTILLA_AGENTS_REPLACE'));
  addClientOptions(install).action(async (source: string, opts: ClientOptions & { ref?: string; replace?: boolean }, self: Command) => {
    const client = await clientFrom(opts);
    const where = !/^[a-z+]+:\/\//i.test(source) && !/^[^/]+@[^/]+:/.test(source) && existsSync(source) ? resolve(source) : source;
    const installed = await client.installAgents({ source: where, ...(opts.ref ? { ref: opts.ref } : {}), ...(opts.replace ? { replace: true } : {}) });
    if (wantsJson(self, opts)) return void out(JSON.stringify({ installed }));
    for (const v of installed) out(`installed ${v.name} ${v.version} from ${v.source}${v.ref ? `@${v.ref}` : ''} (${v.commit})`);
  });
}

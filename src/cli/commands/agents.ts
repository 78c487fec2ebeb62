import { Command } from 'commander';
import type { CliContext } from '../context.js';
import { cut, formatTable } from '../format.js';
import { addClientOptions, clientFrom, wantsJson, type ClientOptions } from '../options.js';

/** `flotilla agents [list]`: the agents the server knows. */
export function registerAgents(program: Command, ctx: CliContext): void {
  const agents = program.command('agents').description('list the agents the server can run');
  const list = agents.command('list', { isDefault: true }).description('list agents');
  addClientOptions(list).action(async (opts: ClientOptions, self: Command) => {
    const client = await clientFrom(opts);
    const all = await client.listAgents();
    const out = (s: string) => ctx.io.stdout.write(s + '\n');
    if (wantsJson(self, opts)) return void out(JSON.stringify({ agents: all }));
    if (all.length === 0) return void out('no agents');
    out(formatTable(['name', 'version', 'harness', 'model', 'description'], all.map((a) => [a.name, a.version, a.harness, a.model, cut(a.description, 60)])));
  });
}

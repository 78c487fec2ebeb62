import type { Command } from 'commander';

/**
 * Makes every command group with a default subcommand (`models` → `models list`, `jobs` →
 * `jobs list`, ...) refuse a word that names none of its subcommands as commander refuses an
 * unknown top-level command, instead of handing it to the default one (which said
 * `too many arguments for 'list'`): `error: unknown command 'bogus' (models commands: list, set,
 * default, delete, price)`, exit 2 (a CommanderError, `commander.unknownCommand`). A default
 * subcommand that takes arguments of its own keeps them. Walks `program`'s whole tree; call once
 * after every command is registered.
 */
export function refuseUnknownSubcommands(program: Command): void {
  for (const group of program.commands) {
    if (group.commands.length === 0) continue;
    group.hook('preSubcommand', (self, sub) => {
      const first = self.args[0];
      // Dispatched by name (or an alias), or nothing/an option first: commander's own handling.
      if (first === undefined || first.startsWith('-') || sub.name() === first || sub.aliases().includes(first)) return;
      if (sub.registeredArguments.length > 0) return; // the default subcommand takes it as its argument
      const names = self.commands.filter((c) => !(c as Command & { _hidden?: boolean })._hidden).map((c) => c.name());
      self.error(`error: unknown command '${first}' (${self.name()} commands: ${names.join(', ')})`, { code: 'commander.unknownCommand', exitCode: 2 });
    });
    refuseUnknownSubcommands(group);
  }
}

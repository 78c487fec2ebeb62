import type { Command } from 'commander';
import { LIST_OPTIONS } from './list-option.js';

/**
 * Refuses an option that takes one value given more than once on the command line, on every
 * command of `program`: commander keeps the last (`flotilla budget 1 --add 1 --add 2` added $2
 * with exit 0, where a user may have meant $3: fresh-user finding). A usage error (exit 2)
 * naming the option, not its values (a `--token` is a secret): `option '--add <usd>' given twice: give it once`.
 * Options with a list of values (list-option.ts: `--key K --key K2`, `--agents DIR --agents DIR2`)
 * and flags without a value may repeat; a value from the option's environment variable does not count.
 */
export function refuseRepeatedOptions(program: Command): void {
  for (const o of program.options) {
    if ((!o.required && !o.optional) || o.variadic || LIST_OPTIONS.has(o)) continue;
    let given = 0;
    program.on(`option:${o.name()}`, () => {
      if (++given === 2) program.error(`error: option '${o.flags}' given twice: give it once`, { code: 'commander.optionRepeated', exitCode: 2 });
    });
  }
  for (const sub of program.commands) refuseRepeatedOptions(sub);
}

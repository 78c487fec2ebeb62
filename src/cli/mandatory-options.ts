import type { Command, Option } from 'commander';

/**
 * Names the environment variable of a mandatory option left out, on every command of
 * `program`: commander's own message (`required option '--role <role>' not specified`) gives
 * the flag alone, though every flag can come from its `FLOTILLA_*` variable (a fresh tester:
 * `flotilla tokens create` without `--role` did not say FLOTILLA_TOKENS_ROLE would do). A usage
 * error (exit 2): `required option '--role <role>' not specified (or FLOTILLA_TOKENS_ROLE)`.
 * Overrides commander's `missingMandatoryOptionValue` on each command (commander 12+/14: the
 * one method it calls for this, with the Option).
 */
export function nameMandatoryOptionVariables(program: Command): void {
  const cmd = program as Command & { missingMandatoryOptionValue(option: Option): void };
  cmd.missingMandatoryOptionValue = (option: Option) => {
    const env = option.envVar ? ` (or ${option.envVar})` : '';
    program.error(`error: required option '${option.flags}' not specified${env}`, { code: 'commander.missingMandatoryOptionValue', exitCode: 2 });
  };
  for (const sub of program.commands) nameMandatoryOptionVariables(sub);
}

import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { ApiError } from '../client/index.js';
import { redact } from '../core/log.js';
import { SettingError } from '../core/setting-env.js';
import { maskUrlPasswords } from '../protocol/index.js';
import { cutQuotedEchoes } from '../protocol/echo.js';
import { registerAgents } from './commands/agents.js';
import { registerBudget } from './commands/budget.js';
import { registerCosts } from './commands/costs.js';
import { registerModels } from './commands/models.js';
import { registerTiers } from './commands/tiers.js';
import { registerTokens } from './commands/tokens.js';
import { registerJobs } from './commands/jobs.js';
import { registerRun } from './commands/run.js';
import { registerRunners } from './commands/runners.js';
import { registerHold } from './commands/hold.js';
import { registerTasks } from './commands/tasks.js';
import { registerReceivers } from './commands/receivers.js';
import { registerJobsStart } from './commands/jobs-start.js';
import { registerMcp } from './commands/mcp.js';
import { registerRunner } from './local/runner.js';
import { registerUp } from './local/up.js';
import type { CliContext } from './context.js';
import { processIO, type CliIO } from './io.js';
import { CliError, applyBooleanEnv, parseBoolEnv, refuseEmptyValues, wantsJson } from './options.js';
import { packageVersion } from './paths.js';
import { refuseUnknownSubcommands } from './unknown-subcommand.js';
import { refuseRepeatedOptions } from './repeated-options.js';
import { nameMandatoryOptionVariables } from './mandatory-options.js';

/** Exit code for bad arguments (unknown command or option, invalid value). */
export const EXIT_USAGE = 2;

/**
 * Builds the `flotilla` command tree. Every command has `--help`; every option can also come
 * from an environment variable (shown in its help); errors go to `ctx.io.stderr`, except while
 * `quietErrors()` is true (main() prints them as JSON then: commander writes only usage errors
 * and the help that follows them to stderr).
 */
export function buildProgram(ctx: CliContext, quietErrors: () => boolean = () => false): Command {
  const program = new Command('flotilla')
    .description('Run a fleet of coding agents (Claude Code, Codex, any command) on machines you already own.')
    .version(packageVersion(), '-V, --version')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void ctx.io.stdout.write(s),
      writeErr: (s) => void (quietErrors() ? undefined : ctx.io.stderr.write(s)),
      // Commander repeats a bad argument in full (`argument '<5,000 characters>' is invalid`): cut it.
      // Its `error: ` prefix becomes ours: every failure reads `flotilla: <message>` (README).
      outputError: (s, write) => write(cutQuotedEchoes(s).replace(/^error: /, 'flotilla: ')),
    })
    .showSuggestionAfterError(true)
    // Boolean FLOTILLA_* variables: only 1/0/true/false/yes/no (commander takes any value as true);
    // any other option given blank, from its flag or its variable, is refused.
    .hook('preAction', (_self, action) => {
      applyBooleanEnv(action);
      refuseEmptyValues(action);
    });
  registerRun(program, ctx);
  registerJobs(program, ctx);
  registerJobsStart(program, ctx);
  registerRunners(program, ctx);
  registerHold(program, ctx);
  registerTasks(program, ctx);
  registerReceivers(program, ctx);
  registerAgents(program, ctx);
  registerBudget(program, ctx);
  registerCosts(program, ctx);
  registerModels(program, ctx);
  registerTiers(program, ctx);
  registerTokens(program, ctx);
  registerUp(program, ctx);
  registerRunner(program, ctx);
  registerMcp(program, ctx);
  // `flotilla models bogus`: unknown command (listing the group's), not the default's excess argument.
  refuseUnknownSubcommands(program);
  // `--add 1 --add 2`: a usage error, not the last one silently
  refuseRepeatedOptions(program);
  // `tokens create` without --role: the message names FLOTILLA_TOKENS_ROLE too
  nameMandatoryOptionVariables(program);
  // after a bad argument, the command's own help: "(see flotilla budget --help)" (it said
  // "(add --help for usage)", read as a command named add: tester finding)
  helpHintPerCommand(program, 'flotilla');
  return program;
}

/** Sets each command's hint after an error to its own help command, `(see flotilla jobs show --help)`, and so on down. */
function helpHintPerCommand(cmd: Command, path: string): void {
  cmd.showHelpAfterError(`(see ${path} --help)`);
  for (const sub of cmd.commands) helpHintPerCommand(sub, `${path} ${sub.name()}`);
}

/**
 * The `flotilla` command. `argv` is in `process.argv` form: `[node, script, ...args]`.
 * Returns the exit code: 0 only on success; 2 for bad arguments; 130 after Ctrl-C of an
 * attached run; 1 for every other failure. The message is on stderr (secrets redacted, a URL's
 * password shown as `***`): `flotilla: <message>`, or with `--json` (or FLOTILLA_JSON) one line
 * of JSON, {@link JsonError}, for every command and every failure, usage errors included.
 */
export async function main(argv: string[], io: CliIO = processIO()): Promise<number> {
  let code = 0;
  // The command's own --json once it runs (preAction); before that, while commander parses, what argv and FLOTILLA_JSON ask for.
  let json: boolean | undefined;
  const jsonErrors = () => json ?? argvWantsJson(argv);
  const ctx: CliContext = {
    io,
    setExit: (c) => {
      code = c;
    },
    runLocal: async (p) => (await import('./local/run-local.js')).runLocal(p),
  };
  const program = buildProgram(ctx, jsonErrors);
  program.hook('preAction', (_self, action) => {
    json = action.options.some((o) => o.long === '--json') && wantsJson(action, action.opts());
  });
  const fail = (exitCode: number, message: string, err?: unknown): number => {
    const text = redact(maskUrlPasswords(message));
    if (!jsonErrors()) io.stderr.write(`flotilla: ${text}\n`);
    else io.stderr.write(JSON.stringify(jsonError(text, exitCode, err)) + '\n');
    return exitCode;
  };
  try {
    await program.parseAsync(argv, { from: 'node' });
    return code;
  } catch (err) {
    // Thrown by an action (not while parsing): commander has not printed it.
    if (err instanceof InvalidArgumentError) return fail(EXIT_USAGE, cutQuotedEchoes(err.message));
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      if (err.exitCode === 0) return 0;
      // Commander printed the message itself, unless JSON was asked for (quietErrors).
      if (jsonErrors()) fail(EXIT_USAGE, err.code === 'commander.help' ? 'a subcommand is required (see its --help)' : cutQuotedEchoes(err.message.replace(/^error: /, '')));
      return EXIT_USAGE;
    }
    // a FLOTILLA_* setting the server cannot use: a usage error, as a bad flag is
    // --json: the field is a key of its own, not repeated in the message (tester finding)
    return fail(err instanceof CliError ? err.exitCode : err instanceof SettingError ? EXIT_USAGE : 1, describeError(err, !jsonErrors()), err);
  }
}

/**
 * A failure as `--json` prints it on stderr: `message` as the text form says it; `code` the
 * API's error code (`not_found`, `invalid_request`, ..., or the client's own `network`,
 * `bad_response`, `http_<status>`), or a CliError's own (`not_found`: no runner of that name),
 * else `usage` (exit code 2) or `error`; `status` the HTTP
 * status of an API error (0: the server was not reached); `field` the input the API named.
 */
export interface JsonError {
  error: { message: string; code: string; status?: number; field?: string };
}

function jsonError(message: string, exitCode: number, err: unknown): JsonError {
  if (err instanceof ApiError) return { error: { message, code: err.code, status: err.status, ...(err.field ? { field: err.field } : {}) } };
  if (err instanceof CliError && err.code) return { error: { message, code: err.code } };
  return { error: { message, code: exitCode === EXIT_USAGE ? 'usage' : 'error' } };
}

/** `--json` among the arguments (before a `--`), or FLOTILLA_JSON set to 1/true/yes. */
function argvWantsJson(argv: string[]): boolean {
  const args = argv.slice(2);
  const end = args.indexOf('--');
  if ((end === -1 ? args : args.slice(0, end)).includes('--json')) return true;
  try {
    return parseBoolEnv('FLOTILLA_JSON', process.env.FLOTILLA_JSON ?? '') === true;
  } catch {
    return false; // a bad value: main() says so, as text
  }
}

/** A one-line explanation of an error for the user, with a hint for the common API failures; `withField`: the API error's field named after it when the message does not name it (not for --json, which gives it as a key). */
export function describeError(err: unknown, withField = true): string {
  if (err instanceof ApiError) {
    let msg = err.message;
    if (withField && err.field && !msg.includes(err.field)) msg += ` (field: ${err.field})`;
    // (a message that already names the refused token, as run --parent-token's does, keeps its own advice)
    if (err.status === 401 && !msg.includes('FLOTILLA_PARENT_TOKEN')) msg += ' — check --token / FLOTILLA_TOKEN';
    // Not a Flotilla reply (client/errors.ts: "... answered 404 with text/html: is it the Flotilla control plane?"), or no TLS where https was asked for.
    if (msg.endsWith('is it the Flotilla control plane?') || (err.code === 'network' && msg.includes('TLS handshake failed'))) msg += ' (check --server / FLOTILLA_SERVER)';
    else if (err.code === 'network') msg += ' — is `flotilla up` running? (--server / FLOTILLA_SERVER)';
    return msg;
  }
  return err instanceof Error ? err.message : String(err);
}

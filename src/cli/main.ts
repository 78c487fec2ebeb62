import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { ApiError } from '../client/index.js';
import { redact } from '../core/log.js';
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
import { CliError, applyBooleanEnv } from './options.js';
import { packageVersion } from './paths.js';

/** Exit code for bad arguments (unknown command or option, invalid value). */
export const EXIT_USAGE = 2;

/**
 * Builds the `flotilla` command tree. Every command has `--help`; every option can also come
 * from an environment variable (shown in its help); errors go to `ctx.io.stderr`.
 */
export function buildProgram(ctx: CliContext): Command {
  const program = new Command('flotilla')
    .description('Run a fleet of coding agents (Claude Code, Codex, any command) on machines you already own.')
    .version(packageVersion(), '-V, --version')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void ctx.io.stdout.write(s),
      writeErr: (s) => void ctx.io.stderr.write(s),
    })
    .showHelpAfterError('(add --help for usage)')
    .showSuggestionAfterError(true)
    // Boolean FLOTILLA_* variables: only 1/0/true/false/yes/no (commander takes any value as true).
    .hook('preAction', (_self, action) => applyBooleanEnv(action));
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
  return program;
}

/**
 * The `flotilla` command. `argv` is in `process.argv` form: `[node, script, ...args]`.
 * Returns the exit code: 0 only on success; 2 for bad arguments; 130 after Ctrl-C of an
 * attached run; 1 for every other failure (the message is on stderr, secrets redacted).
 */
export async function main(argv: string[], io: CliIO = processIO()): Promise<number> {
  let code = 0;
  const ctx: CliContext = {
    io,
    setExit: (c) => {
      code = c;
    },
    runLocal: async (p) => (await import('./local/run-local.js')).runLocal(p),
  };
  const program = buildProgram(ctx);
  try {
    await program.parseAsync(argv, { from: 'node' });
    return code;
  } catch (err) {
    // Thrown by an action (not while parsing): commander has not printed it.
    if (err instanceof InvalidArgumentError) {
      io.stderr.write(`flotilla: ${redact(err.message)}\n`);
      return EXIT_USAGE;
    }
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      return err.exitCode === 0 ? 0 : EXIT_USAGE; // commander already printed the message
    }
    io.stderr.write(`flotilla: ${redact(describeError(err))}\n`);
    return err instanceof CliError ? err.exitCode : 1;
  }
}

/** A one-line explanation of an error for the user, with a hint for the common API failures. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) {
    let msg = err.message;
    if (err.field && !msg.includes(err.field)) msg += ` (field: ${err.field})`;
    if (err.status === 401) msg += ' — check --token / FLOTILLA_TOKEN';
    if (err.code === 'network') msg += ' — is `flotilla up` running? (--server / FLOTILLA_SERVER)';
    return msg;
  }
  return err instanceof Error ? err.message : String(err);
}

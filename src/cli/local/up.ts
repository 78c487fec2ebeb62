import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { listOption } from '../list-option.js';
import { parseDurationMs } from '../../core/duration.js';
import type { Labels } from '../../protocol/index.js';
import type { CliContext } from '../context.js';
import { onInterrupt, untilInterrupted } from '../io.js';
import { CliError, checkFolderOption, dataOption, defaultDataDir, intIn, makeFolderOption, parseLabels, refuseEmptyOptions, repoBaseDir, repoBaseOption } from '../options.js';
import { shellLine, shellQuote } from '../../protocol/shell-quote.js';
import { assertReachablePort } from '../../server/blocked-ports.js';
import { credentialPath } from '../../runner/credential.js';
import { withoutShortAdvice } from './revoked.js';

interface UpOptions {
  host: string;
  port: number;
  data: string;
  agents?: string[];
  repoBase?: string;
  runner: boolean;
  labels?: Labels;
  capacity: number;
  heartbeatInterval?: number;
  heartbeatTimeout?: number;
  holdNewRunners: number;
}

/** Commander parser for a duration flag (`15m`, `1h`, `off`) → milliseconds. */
function durationArg(flag: string): (v: string) => number {
  return (v: string) => {
    try {
      return parseDurationMs(v, flag);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  };
}

/** Hosts that only this machine can reach. */
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

/**
 * `flotilla up [--host] [--port 8787] [--data DIR] [--agents DIR...] [--no-runner] [--labels]
 * [--capacity]`: the control plane (store: PostgreSQL when DATABASE_URL is set, else SQLite in
 * the data folder; agents: the shipped ones plus --agents; gateway from the environment) and,
 * unless --no-runner, a runner in the same process. Prints the URL, where the admin token is,
 * and the command line that adds a runner on another machine; runs until SIGINT/SIGTERM,
 * then stops the runner, the server and the store.
 */
export function registerUp(program: Command, ctx: CliContext): void {
  program
    .command('up')
    .description('start the control plane (and a local runner) on this machine; runs until Ctrl-C')
    .addOption(new Option('--host <host>', 'address to listen on (0.0.0.0: reachable from other machines)').env('FLOTILLA_HOST').default('127.0.0.1'))
    .addOption(new Option('--port <port>', 'port to listen on (0 = any free port)').env('FLOTILLA_PORT').argParser(listenPort).default(8787))
    .addOption(dataOption('data folder: SQLite database (unless DATABASE_URL is set), admin-token, runner/'))
    .addOption(listOption('--agents <dir>', 'an agent folder besides the shipped ones').env('FLOTILLA_AGENTS'))
    .addOption(new Option('--no-runner', 'do not start a runner in this process').env('FLOTILLA_NO_RUNNER'))
    .addOption(new Option('--labels <k=v,...>', 'labels of the local runner').env('FLOTILLA_LABELS').argParser(parseLabels))
    .addOption(repoBaseOption())
    .addOption(new Option('--capacity <n>', 'parallel jobs of the local runner (1-4)').env('FLOTILLA_CAPACITY').argParser(intIn(1, 4, 'capacity')).default(1))
    .addOption(new Option('--heartbeat-interval <ms>', 'how often runners heartbeat, milliseconds (default 5000)').env('FLOTILLA_HEARTBEAT_INTERVAL_MS').argParser(intIn(100, 600_000, 'heartbeat interval')))
    .addOption(new Option('--heartbeat-timeout <ms>', 'a runner silent this long is offline and its jobs lost, milliseconds (default 20000)').env('FLOTILLA_HEARTBEAT_TIMEOUT_MS').argParser(intIn(500, 3_600_000, 'heartbeat timeout')))
    .addOption(
      new Option('--hold-new-runners <duration>', 'hold each newly registered runner this long (status provisioning) while it finishes its setup, e.g. 15m; off by default, never the local runner')
        .env('FLOTILLA_HOLD_NEW_RUNNERS')
        .argParser(durationArg('--hold-new-runners'))
        .default(0, 'off'),
    )
    .addHelpText(
      'after',
      [
        '',
        'Model providers and the gateway (environment only: keys never go on a command line; the README has every setting):',
        '  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL      Anthropic upstream (unset: the offline scripted model); comma-separated keys rotate',
        '  OPENAI_API_KEY, OPENAI_BASE_URL            OpenAI upstream for /v1/chat/completions and /v1/responses',
        '  FLOTILLA_OPENAI_COMPATIBLE_URL (+ _KEY)    an openai-compatible upstream (llama.cpp, Ollama, a company gateway)',
        '  FLOTILLA_MODEL_PROVIDERS                   model -> provider rules, e.g. claude-*=anthropic,gpt-*=openai',
        '  FLOTILLA_CONFIG                            the config file (default ./flotilla.yaml when present): gateway.models and gateway.prices',
        '  FLOTILLA_PRICES_FILE                       a price table of your own instead of data/prices.json',
        '  DATABASE_URL                               postgres://... puts every state in PostgreSQL (default: SQLite in --data)',
      ].join('\n'),
    )
    .action(async (opts: UpOptions, self: Command) => {
      const { io } = ctx;
      // FLOTILLA_DATA= used the current folder (a blank FLOTILLA_HOST, which listened on every
      // interface, is refused before this: options.ts refuseEmptyValues).
      refuseEmptyOptions(self, ['data']);
      await checkFolderOption('--data', opts.data, 'FLOTILLA_DATA');
      const interval = opts.heartbeatInterval ?? 5000;
      const timeout = opts.heartbeatTimeout ?? 20000;
      if (timeout < 2 * interval) {
        // The server's own rule (server.ts): one late beat must not lose a healthy runner's jobs.
        throw new CliError(`--heartbeat-timeout (FLOTILLA_HEARTBEAT_TIMEOUT_MS) ${timeout} ms must be at least twice --heartbeat-interval (FLOTILLA_HEARTBEAT_INTERVAL_MS) ${interval} ms`, 2);
      }
      // Before the data folder, its database and admin token are made: a port in use or a host
      // that is not this machine's left them behind (fresh-tester finding). The server binds again
      // (another process could take the port in between: then it fails as before).
      await probeListen(opts.host ?? '127.0.0.1', opts.port ?? 8787);
      await makeFolderOption('--data', opts.data, 0o700);
      const { apiRoutesLine, cliLogger, inheritedLongContextWarnings, modelLine, startLocalStack } = await import('./stack.js');
      const { pricesInEffect } = await import('../../gateway/price-sources.js');
      const { createRegistrationToken } = await import('../../server/auth.js');
      const log = cliLogger(process.env, 'info', (line) => void io.stderr.write(line));
      const agentsDirs = opts.agents ?? [];
      const labels = opts.labels ?? {};
      const stack = await startLocalStack({
        data: opts.data,
        host: opts.host,
        port: opts.port,
        agentsDirs,
        runner: opts.runner,
        runnerLabels: labels,
        runnerCapacity: opts.capacity,
        repoBaseDir: await repoBaseDir(opts.repoBase),
        heartbeatIntervalMs: opts.heartbeatInterval,
        heartbeatTimeoutMs: opts.heartbeatTimeout,
        newRunnerHoldMs: opts.holdNewRunners,
        log,
      });
      const say = (s: string) => void io.stdout.write(s + '\n');
      let offAgain = (): void => undefined;
      try {
        const where = stack.dialect === 'postgres' ? 'PostgreSQL (DATABASE_URL)' : `SQLite in ${resolve(opts.data)}`;
        say(`flotilla: server on ${stack.server.url} (${where})`);
        say(modelLine(stack.gateway));
        const apiRoutes = apiRoutesLine(stack.gateway, await stack.store.listModelRoutes());
        if (apiRoutes) say(apiRoutes);
        for (const w of inheritedLongContextWarnings(pricesInEffect(stack.gateway, await stack.store.listModelPrices()), stack.gateway.prices.version)) say(`flotilla: warning: ${w}`);
        const dataHint = resolve(opts.data) === resolve(defaultDataDir()) ? '' : ` with --data ${shellQuote(opts.data)} or FLOTILLA_DATA=${shellQuote(opts.data)}`;
        say(`flotilla: admin token in ${stack.adminTokenFile} (the CLI on this machine reads it${dataHint})`);
        if (stack.runner) {
          const lbl = Object.keys(labels).length ? `, labels ${Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(',')}` : '';
          say(`flotilla: local runner ${stack.runner.runnerId} working in ${resolve(opts.data, 'runner')} (capacity ${opts.capacity}${lbl})`);
        }
        const publicUrl = LOOPBACK.has(opts.host)
          ? stack.server.url
          : stack.server.url.replace(/^(https?:\/\/)(0\.0\.0\.0|\[::\]|::)(?=:)/, `$1${hostname()}`);
        if (io.stdout.isTTY) {
          // A live secret goes to a terminal only: under systemd or a pipe, stdout ends up in
          // logs (journald), so there the user is told how to make one instead.
          const regToken = await createRegistrationToken(stack.store, {}, 3600_000, Date.now());
          say('flotilla: to add a runner on another machine (token: single use, valid 1 h; more with `flotilla runners token create`):');
          say(`  ${shellLine(['flotilla', 'runner', '--server', publicUrl, '--token', regToken])}`);
        } else {
          // The exact command for this server: its URL, and its data folder unless it is the default.
          const dataArg = resolve(opts.data) === resolve(defaultDataDir()) ? [] : ['--data', opts.data];
          say(`flotilla: to add a runner on another machine, make a registration token with \`${shellLine(['flotilla', 'runners', 'token', 'create', '--server', stack.server.url, ...dataArg])}\`, then:`);
          say(`  ${shellLine(['flotilla', 'runner', '--server', publicUrl])} --token <token>`);
        }
        if (LOOPBACK.has(opts.host)) say('  (this server listens on 127.0.0.1 only: start it with --host 0.0.0.0 to accept other machines)');
        say('flotilla: press Ctrl-C to stop');
        // the local runner revoked (or its credential taken by another process): up stops with
        // it, as it would at its next start (it kept serving with no runner: tester finding)
        const ended = stack.runner?.ended ?? new Promise<never>(() => {});
        const sig = await Promise.race([untilInterrupted(io), ended]);
        if (typeof sig !== 'string') {
          const workDir = resolve(opts.data, 'runner');
          throw new CliError(`local runner stopped: ${withoutShortAdvice(sig.message)}; flotilla up stops with it. To run a local runner again: delete ${credentialPath(workDir)} and start flotilla up again (or start it with --no-runner)`, 1);
        }
        say(`flotilla: ${sig}: stopping (model calls in flight may run on for up to 8 s; Ctrl-C again cuts them now)`);
        // A second signal cuts the model calls still running, each recorded with what was seen
        // (gateway.ts drain); a third gets Node's default, exit at once. It killed the process
        // with calls in flight, their reservations left for the sweeper's worst-case charge.
        offAgain = onInterrupt(io, (again) => {
          say(`flotilla: ${again} again: killing the local runner's jobs and cutting the model calls still running (once more: exit at once, and calls not yet recorded are charged their worst case after a restart)`);
          void stack.runner?.stop({ cancelJobs: true, graceMs: 0 });
          stack.server.hurryClose();
        });
      } finally {
        await stack.close();
        offAgain();
      }
      ctx.setExit(0);
    });
}

/**
 * `--port` (FLOTILLA_PORT): a whole number 0..65535 that clients can reach (server/blocked-ports.ts:
 * the Fetch standard's bad ports are refused here, exit 2, before the data folder or its database
 * is made; the server refuses them again when it binds).
 * @throws InvalidArgumentError naming the rule.
 */
function listenPort(text: string): number {
  const port = intIn(0, 65535, 'port')(text);
  try {
    assertReachablePort(port);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return port;
}

/**
 * Binds `host:port` and lets it go at once, to find a port in use (EADDRINUSE) or a host this
 * machine has no address for before anything is written; port 0 (any free port) is not tried.
 * @throws CliError (exit 1) `cannot listen on HOST:PORT: <the OS error>`, the server's own wording.
 */
async function probeListen(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: Error) => reject(new CliError(`cannot listen on ${host}:${port}: ${err.message}`)));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve()));
  });
}
